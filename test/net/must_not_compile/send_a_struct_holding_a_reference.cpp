// Must not compile: a reference field is trivially copied as the address of
// what it refers to, which means nothing on another node.
#include <cstddef>
#include <vector>

#include "net/net.hpp"

struct halo {
    std::size_t first;
    const std::vector<double>& row;
};

void f(csp::net::node& n, const halo& h) { n.send(1, 1, h); }
