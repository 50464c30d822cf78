// Must not compile: a struct's bytes would carry its pointer to another node.
#include <cstddef>

#include "net/net.hpp"

struct slice {
    double* first;
    std::size_t count;
};

void f(csp::net::node& n, slice s) { n.send(1, 1, s); }
