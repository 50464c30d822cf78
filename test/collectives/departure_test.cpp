// A collective over nodes fails on every rank, with the peer's error, once a
// member has left or is lost: no rank waits for ever on one that is gone.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "collectives/collectives.hpp"
#include "collectives/net_communicator.hpp"
#include "csp/runtime.hpp"
#include "net/net.hpp"
#include "test/net/net_fixture.hpp"

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
                csp::net::node self(net_test::options_for(ns, "departure-allreduce", r, n));
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

// Regression: with a rank killed during an allreduce, the two ranks waiting
// on it failed, and the third waited for ever on a rank that had failed and
// closed. Rank 3 runs in its own OS process and is killed mid-loop; ranks
// 0-2 must each fail with a peer_error within a few seconds.
TEST(collective_departures, a_rank_killed_mid_allreduce_fails_the_allreduce_on_every_other_rank) {
    csp::net::nameserver ns;
    constexpr int n = 4;
    const pid_t pid = net_test::spawn_node(COLLECTIVES_NET_PEER, {"allreduce-forever"}, ns, "killed-allreduce", 3, n);

    std::atomic<int> rounds_done{0}, failed{0};
    std::atomic<bool> killed{false};
    std::vector<std::thread> ranks;
    for (int r = 0; r < n - 1; ++r)
        ranks.emplace_back([&, r] {
            csp::run([&] {
                csp::net::node self(net_test::options_for(ns, "killed-allreduce", r, n));
                cc::net_communicator comm(self);
                try {
                    for (int i = 0;; ++i) {
                        EXPECT_EQ(cc::allreduce(comm, 1, cc::sum{}), n);
                        if (r == 0 && i == 50) rounds_done = 1;
                    }
                } catch (const csp::net::peer_error& e) {
                    EXPECT_TRUE(killed.load()) << "rank " << r << " failed before the kill: " << e.what();
                    ++failed;
                }
            });
        });
    while (!rounds_done.load()) std::this_thread::sleep_for(1ms);
    killed = true;
    const auto start = std::chrono::steady_clock::now();
    ::kill(pid, SIGKILL);
    for (auto& t : ranks) t.join();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
    EXPECT_EQ(failed.load(), n - 1);
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status));
}

// A lost peer during a shared-variable force point: every other rank's read
// throws the peer's error, and reads after it throw it again.
TEST(collective_departures, a_rank_killed_mid_force_point_fails_every_shared_variable_read) {
    csp::net::nameserver ns;
    constexpr int n = 3;
    const pid_t pid = net_test::spawn_node(COLLECTIVES_NET_PEER, {"shared-forever"}, ns, "killed-shared", 2, n);

    std::atomic<int> rounds_done{0}, failed{0};
    std::atomic<bool> killed{false};
    std::vector<std::thread> ranks;
    for (int r = 0; r < n - 1; ++r)
        ranks.emplace_back([&, r] {
            csp::run([&] {
                csp::net::node self(net_test::options_for(ns, "killed-shared", r, n));
                cc::net_communicator comm(self);
                cc::shared_group g(comm);
                cc::shared<long> x(g);
                try {
                    for (long i = 1;; ++i) {
                        x += 1;
                        EXPECT_EQ(x.get(), i * n);
                        if (r == 0 && i == 50) rounds_done = 1;
                    }
                } catch (const csp::net::peer_error& e) {
                    EXPECT_TRUE(killed.load()) << "rank " << r << " failed before the kill: " << e.what();
                    try {
                        (void)x.get();
                        ADD_FAILURE() << "a read after the failure returned";
                    } catch (const csp::net::peer_error& again) {
                        EXPECT_STREQ(again.what(), e.what());
                    }
                    ++failed;
                }
            });
        });
    while (!rounds_done.load()) std::this_thread::sleep_for(1ms);
    killed = true;
    const auto start = std::chrono::steady_clock::now();
    ::kill(pid, SIGKILL);
    for (auto& t : ranks) t.join();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
    EXPECT_EQ(failed.load(), n - 1);
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status));
}
