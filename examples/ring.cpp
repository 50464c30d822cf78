// A ring of nodes (OS processes) passing a token through ports.
//
//   ./build/tools/csp-launch -n 4 ./build/examples/ring [laps] [--trace FILE ...]   (model_flags.hpp)
//
// Node 0 sends a token round the ring `laps` times; every node adds its rank
// to it. Meanwhile each node reports to node 0's second port, and node 0
// serves both ports in one alternation. Exits 1 if the sum is wrong.
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <string>

#include "arguments.hpp"
#include "csp/csp.hpp"
#include "model_flags.hpp"
#include "net/net.hpp"

namespace {

constexpr csp::net::port_id ring = 1, reports = 2;
enum : std::uint64_t { pass_on = 0, stop = 1 };

}  // namespace

int main(int argc, char** argv) try {
    auto flags = examples::model_flags::take(argc, argv);
    examples::at_most(argc, argv, 1, "[laps]");
    const long laps = examples::number_at(argc, argv, 1, "the number of laps", 3L, 1L);
    return flags.run("ring", [&] { return csp::run([&] {
        csp::net::node self;
        const int me = self.rank(), n = self.size();
        const int next = (me + 1) % n;
        auto token_in = self.open(ring);
        self.send(0, reports, "node " + std::to_string(me) + " of " + std::to_string(n) + " is process " +
                                  std::to_string(::getpid()));
        if (me != 0) {
            for (;;) {
                csp::net::message m = token_in.receive();
                if (m.tag == stop) {
                    if (next != 0) self.send(next, ring, 0L, stop);
                    return 0;
                }
                self.send(next, ring, m.as<long>() + me);
            }
        }

        auto report_in = self.open(reports);
        long token = 0, lap = 0;
        int reported = 0;
        self.send(next % n, ring, 0L);
        while (lap < laps || reported < n) {
            std::string line;
            switch (csp::select(csp::net::input(token_in, token), csp::net::input(report_in, line))) {
                case 0:
                    ++lap;
                    std::printf("lap %ld: token = %ld\n", lap, token);
                    if (lap < laps) self.send(next % n, ring, token);
                    break;
                case 1:
                    ++reported;
                    std::printf("%s\n", line.c_str());
                    break;
            }
        }
        if (n > 1) self.send(next, ring, 0L, stop);
        const long expected = laps * (static_cast<long>(n) * (n - 1) / 2);
        std::printf("%d nodes, %ld laps: token %ld, expected %ld\n", n, laps, token, expected);
        std::fflush(stdout);
        return token == expected ? 0 : 1;
    }); });
} catch (const std::exception& e) {
    std::fprintf(stderr, "ring: %s\n", e.what());
    return 1;
}
