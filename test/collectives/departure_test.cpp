// A collective over nodes fails on every rank, with the peer's error, once a
// member has left or is lost: no rank waits for ever on one that is gone.
#include <gtest/gtest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "collectives/collectives.hpp"
#include "collectives/net_communicator.hpp"
#include "csp/runtime.hpp"
#include "net/net.hpp"

extern char** environ;

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

// Regression: with a rank killed during an allreduce, the two ranks waiting
// on it failed, and the third waited for ever on a rank that had failed and
// closed. Rank 3 runs in its own OS process and is killed mid-loop; ranks
// 0-2 must each fail with a peer_error within a few seconds.
TEST(collective_departures, a_rank_killed_mid_allreduce_fails_the_allreduce_on_every_other_rank) {
    csp::net::nameserver ns;
    constexpr int n = 4;
    ::setenv("CSP_NAMESERVER", ns.address().str().c_str(), 1);
    ::setenv("CSP_JOB", "killed-allreduce", 1);
    ::setenv("CSP_RANK", "3", 1);
    ::setenv("CSP_SIZE", "4", 1);
    ::setenv("CSP_TOKEN", "", 1);
    pid_t pid;
    char mode[] = "allreduce-forever";
    char* argv[] = {const_cast<char*>(COLLECTIVES_NET_PEER), mode, nullptr};
    ASSERT_EQ(::posix_spawn(&pid, COLLECTIVES_NET_PEER, nullptr, nullptr, argv, environ), 0);
    for (const char* v : {"CSP_NAMESERVER", "CSP_JOB", "CSP_RANK", "CSP_SIZE", "CSP_TOKEN"}) ::unsetenv(v);

    std::atomic<int> rounds_done{0}, failed{0};
    std::atomic<bool> killed{false};
    std::vector<std::thread> ranks;
    for (int r = 0; r < n - 1; ++r)
        ranks.emplace_back([&, r] {
            csp::run([&] {
                csp::net::node_options o;
                o.job = "killed-allreduce";
                o.rank = r;
                o.size = n;
                o.nameserver = ns.address();
                csp::net::node self(o);
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
