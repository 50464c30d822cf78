// Must not compile: a received span would point into a message that is gone.
#include <span>

#include "net/net.hpp"

void f(csp::net::port& in) { auto s = in.receive<std::span<const double>>(); (void)s; }
