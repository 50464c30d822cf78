// Values larger than a frame used to be allowed to be: a collective sends
// the user's value whole, so the nodes' frame limit is the largest value a
// broadcast can carry.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <thread>
#include <vector>

#include "collectives/collectives.hpp"
#include "collectives/net_communicator.hpp"
#include "csp/runtime.hpp"
#include "net/net.hpp"
#include "test/net/net_fixture.hpp"

namespace cc = csp::collectives;

// Regression: max_frame was 64 MiB by default, so a broadcast of an 80 MB
// array failed at the root ("send of 83886080 bytes: over this node's
// max_frame") and left the other ranks waiting for it. Over TCP, with the
// defaults: the array arrives whole, and a port message of the same size.
TEST(large_values, an_80_mb_broadcast_and_port_message_arrive_whole_with_the_default_limits) {
    constexpr std::size_t n = 10u << 20;  // doubles: 80 MiB
    csp::net::nameserver ns;
    std::vector<std::string> outcome(2);
    std::vector<std::thread> ranks;
    for (int r = 0; r < 2; ++r)
        ranks.emplace_back([&, r] {
            csp::run([&] {
                auto o = net_test::options_for(ns, "large-values", r, 2);
                o.transport = csp::net::transport_kind::tcp;
                csp::net::node self(o);
                std::string& out = outcome[static_cast<std::size_t>(r)];
                try {
                    auto port = self.open(9);
                    {
                        cc::net_communicator comm(self);
                        std::vector<double> v(r == 0 ? n : 0);
                        for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
                        const auto got = cc::broadcast_binomial(comm, std::move(v), 0);
                        std::size_t wrong = got.size() == n ? 0 : n;
                        for (std::size_t i = 0; i < got.size(); ++i) wrong += got[i] != static_cast<double>(i);
                        out = "broadcast wrong " + std::to_string(wrong);
                        if (r == 0) {
                            self.send(1, 9, got);
                        } else {
                            const auto again = port.receive<std::vector<double>>();
                            out += again == got ? ", port message whole" : ", port message differs";
                        }
                        cc::barrier(comm);
                    }
                } catch (const std::exception& e) {
                    out = e.what();
                }
                self.close();
            });
        });
    for (auto& t : ranks) t.join();
    EXPECT_EQ(outcome[0], "broadcast wrong 0");
    EXPECT_EQ(outcome[1], "broadcast wrong 0, port message whole");
}
