// A node in a process of its own, for tests that need one to die: it sends
// increasing numbers to port 1 of node 0 until it is killed.
#include <cstdint>

#include "csp/alt.hpp"
#include "csp/runtime.hpp"
#include "net/node.hpp"

int main() {
    csp::run([] {
        csp::net::node self;  // from CSP_* variables
        for (std::uint64_t i = 0;; ++i) {
            self.send(0, 1, i);
            if (i % 64 == 0) csp::select(csp::timeout(std::chrono::milliseconds(1)));
        }
    });
}
