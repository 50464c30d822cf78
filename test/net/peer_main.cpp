// A node in a process of its own, for tests that need one to die or stall.
//   (no argument)  sends increasing numbers to port 1 of node 0 until it is killed
//   receive N      prints "ready" once registered, receives N numbers from
//                  node 0 on port 1, checks they come 0, 1, 2, ... and sends
//                  how many did to port 2 of node 0
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "csp/alt.hpp"
#include "csp/runtime.hpp"
#include "net/node.hpp"

int main(int argc, char** argv) {
    if (argc == 3 && std::string(argv[1]) == "receive") {
        const std::uint64_t n = std::strtoull(argv[2], nullptr, 10);
        csp::run([n] {
            csp::net::node self;
            auto inbox = self.open(1);
            std::printf("ready\n");
            std::fflush(stdout);
            std::uint64_t in_order = 0;
            for (std::uint64_t i = 0; i < n; ++i)
                if (inbox.receive<std::uint64_t>() == i) ++in_order;
            self.send(0, 2, in_order);
        });
        return 0;
    }
    csp::run([] {
        csp::net::node self;  // from CSP_* variables
        for (std::uint64_t i = 0;; ++i) {
            self.send(0, 1, i);
            if (i % 64 == 0) csp::select(csp::timeout(std::chrono::milliseconds(1)));
        }
    });
}
