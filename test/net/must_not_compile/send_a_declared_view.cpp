// Must not compile: a struct declared a view, with no owning type to send it as.
#include "net/net.hpp"

struct slice {
    const float* first;
    int count;
};
template <> struct csp::is_view<slice> : std::true_type {};

void f(csp::net::node& n, slice s) { n.send(1, 1, s); }
