// Must not compile: cereal serialises a std::list only with its header
// <cereal/types/list.hpp> included, which net/codec.hpp does not include.
#include <list>

#include "net/net.hpp"

std::list<int> f(csp::net::port& in) { return in.receive<std::list<int>>(); }
