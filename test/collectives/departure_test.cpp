// A collective over nodes fails on every rank, with the peer's error, once a
// member has left or is lost: no rank waits for ever on one that is gone.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "collectives/collectives.hpp"
#include "collectives/net_communicator.hpp"
#include "csp/runtime.hpp"
#include "net/net.hpp"

namespace cc = csp::collectives;
using namespace std::chrono_literals;

// Regression: a rank that closed its node cleanly was no error for the
// others, so an allreduce waiting on it hung.
TEST(collective_departures, an_allreduce_with_a_member_that_left_fails_on_every_other_rank) {
    csp::net::nameserver ns;
    constexpr int n = 3;
    std::atomic<int> failed{0};
    std::vector<std::thread> ranks;
    for (int r = 0; r < n; ++r)
        ranks.emplace_back([&, r] {
            csp::run([&] {
                csp::net::node_options o;
                o.job = "departure-allreduce";
                o.rank = r;
                o.size = n;
                o.nameserver = ns.address();
                csp::net::node self(o);
                if (r == 2) {
                    // Leaves before the allreduce: closes its node, once its
                    // links exist (a departure before any link is a later matter).
                    self.send(0, 7, 0);
                    self.send(1, 7, 0);
                    return;
                }
                cc::net_communicator comm(self);
                const auto start = csp::clock::now();
                try {
                    cc::allreduce(comm, 1, cc::sum{});
                    ADD_FAILURE() << "rank " << r << ": an allreduce with a member gone returned";
                } catch (const csp::net::peer_error& e) {
                    // It names a member that is gone for this rank: rank 2
                    // ("has left", or "lost" when a connection to it was
                    // refused as it closed), or the other rank, which failed
                    // first and closed its node.
                    EXPECT_NE(e.peer(), r) << e.what();
                    EXPECT_NE(std::string(e.what()).find("of job 'departure-allreduce'"), std::string::npos)
                        << e.what();
                    ++failed;
                }
                EXPECT_LT(csp::clock::now() - start, 5s) << "rank " << r;
            });
        });
    for (auto& t : ranks) t.join();
    EXPECT_EQ(failed.load(), n - 1);
}
