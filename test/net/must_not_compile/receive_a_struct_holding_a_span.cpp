// Must not compile: a struct that holds a view (here inside a nested
// struct) would point into memory of the sending node.
#include <span>

#include "net/net.hpp"

struct tile {
    int rank;
    std::span<const double> edge;
};
struct step {
    int number;
    tile t;
};

step f(csp::net::port& p) { return p.receive<step>(); }
