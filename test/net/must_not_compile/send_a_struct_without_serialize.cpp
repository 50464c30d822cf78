// Must not compile: a struct holding a std::string is not trivially
// copyable, and without a serialize function there is no way to send it.
#include <string>

#include "net/net.hpp"

struct particle {
    int id;
    std::string name;
};

void f(csp::net::node& n) { n.send(1, 1, particle{7, "p"}); }
