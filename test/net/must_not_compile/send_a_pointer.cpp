// Must not compile: a pointer's bytes mean nothing on another node.
#include "net/net.hpp"

void f(csp::net::node& n, double* row) { n.send(1, 1, row); }
