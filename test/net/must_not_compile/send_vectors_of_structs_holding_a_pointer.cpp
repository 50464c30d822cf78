// Must not compile: a vector's elements travel as their bytes, and each
// would carry its pointer.
#include <vector>

#include "net/net.hpp"

struct particle {
    double position[3];
    const char* species;
};

void f(csp::net::node& n, const std::vector<particle>& ps) { n.send(1, 1, ps); }
