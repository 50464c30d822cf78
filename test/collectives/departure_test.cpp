// A collective over nodes fails on every rank, with the peer's error, once a
// member has left or is lost: no rank waits for ever on one that is gone.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "collectives/collectives.hpp"
#include "collectives/net_communicator.hpp"
#include "csp/runtime.hpp"
#include "csp/timer.hpp"
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

// Regression: a rank that made collective calls its peers did not make
// failed with "node 1 has left (it closed its node)" and nothing more, where
// the user needs to see that the others were done while it was still in a
// gather, or in an allreduce. The error now names the receive, or the send,
// it ended. The gather's failure revokes its stream, whose later calls are
// refused at their first send.
TEST(collective_departures, a_rank_that_makes_calls_more_hears_which_call_the_others_left_it_in) {
    csp::net::nameserver ns;
    constexpr int n = 2;
    std::string receiving, sending, revoked;
    std::vector<double> results(n);
    std::vector<std::thread> ranks;
    for (int r = 0; r < n; ++r)
        ranks.emplace_back([&, r] {
            csp::run([&] {
                csp::net::node self(net_test::options_for(ns, "departure-extra-call", r, n));
                {
                    cc::net_communicator comm(self);
                    results[static_cast<std::size_t>(r)] = cc::allreduce(comm, 1.0 + r, cc::sum{});
                    if (r == 0) {
                        try {
                            (void)cc::gather(comm, 1.0, 0);  // the root only receives
                            ADD_FAILURE() << "rank 0's extra gather returned";
                        } catch (const csp::net::peer_error& e) {
                            EXPECT_EQ(e.peer(), 1);
                            receiving = e.what();
                        }
                        try {  // the gather's failure revoked stream 0 (revocation.hpp)
                            (void)cc::allreduce_butterfly(comm, 1.0, cc::sum{}, cc::stream{1});  // sends first
                            ADD_FAILURE() << "rank 0's extra allreduce returned";
                        } catch (const csp::net::peer_error& e) {
                            EXPECT_EQ(e.peer(), 1);
                            sending = e.what();
                        }
                        try {
                            (void)cc::allreduce_butterfly(comm, 1.0, cc::sum{});
                            ADD_FAILURE() << "rank 0's allreduce on a revoked stream returned";
                        } catch (const cc::revoked_by_peer_error& e) {
                            EXPECT_EQ(e.peer(), 1);
                            revoked = e.what();
                        }
                    }
                }
                self.close();
            });
        });
    for (auto& t : ranks) t.join();
    EXPECT_EQ(results, (std::vector<double>{3.0, 3.0}));
    for (const auto& what : {receiving, sending})
        EXPECT_EQ(what.rfind("node 1 of job 'departure-extra-call' has left (it closed its node) while this rank ", 0),
                  0u)
            << what;
    EXPECT_NE(receiving.find(" while this rank waited for a message from "), std::string::npos) << receiving;
    EXPECT_NE(receiving.find(" with tag (stream 0, call 1 of gather by "), std::string::npos) << receiving;
    EXPECT_NE(sending.find(" while this rank sent rank 1 a message with tag (stream 1, call 0 of allreduce by "),
              std::string::npos)
        << sending;
    EXPECT_NE(sending.find(", step 0)"), std::string::npos) << sending;
    // A later call of the revoked stream sends nothing: its first send
    // throws the revocation (mailbox::refuse_revoked_send).
    EXPECT_EQ(revoked.rfind("rank 0's gather (call 1 of stream 0) failed: node 1 of job 'departure-extra-call' has "
                            "left (it closed its node) while this rank waited for ",
                            0),
              0u)
        << revoked;
}

// Regression: the reduce that folds its children's parts in arrival order
// received from any rank, so a child that sent its part and closed its
// node (its call was over) failed its parent's wait for a slower child.
// Rank 0's children in the binomial tree are ranks 1 and 2; rank 1 leaves
// at once, rank 2 sends 200 ms later.
TEST(collective_departures, a_child_that_sent_its_part_and_left_does_not_fail_the_arrival_reduce) {
    csp::net::nameserver ns;
    constexpr int n = 3;
    std::string outcome;
    std::vector<std::thread> ranks;
    for (int r = 0; r < n; ++r)
        ranks.emplace_back([&, r] {
            csp::run([&] {
                csp::net::node self(net_test::options_for(ns, "departure-arrival-reduce", r, n));
                {
                    cc::net_communicator comm(self);
                    cc::barrier(comm);  // every link is up
                    if (r == 2) csp::sleep_for(200ms);
                    try {
                        const auto total = cc::reduce_arrival(comm, 1 << r, cc::sum{}, 0);
                        if (r == 0) outcome = "total " + std::to_string(total.value_or(-1));
                    } catch (const std::exception& e) {
                        if (r == 0) outcome = e.what();
                    }
                }
                self.close();
            });
        });
    for (auto& t : ranks) t.join();
    EXPECT_EQ(outcome, "total 7");
}

// Runs ranks 0..n-2 as nodes of this process and rank n-1 as an OS process
// running net_peer.cpp's `peer_mode` loop; kills it once rank 0's `round`
// (a round of the same loop: returns after each) has run 50 times. Every
// rank in this process must then fail with a peer_error within a few
// seconds; `after(e)` checks more at each.
template <class Round, class After>
void kill_a_rank_mid_loop(const char* job, int n, const char* peer_mode, Round round, After after) {
    csp::net::nameserver ns;
    const pid_t pid = net_test::spawn_node(COLLECTIVES_NET_PEER, {peer_mode}, ns, job, n - 1, n);
    std::atomic<int> rounds_done{0}, failed{0};
    std::atomic<bool> killed{false};
    std::vector<std::thread> ranks;
    for (int r = 0; r < n - 1; ++r)
        ranks.emplace_back([&, r] {
            csp::run([&] {
                csp::net::node self(net_test::options_for(ns, job, r, n));
                cc::net_communicator comm(self);
                auto state = round.start(comm);
                try {
                    for (int i = 0;; ++i) {
                        round(comm, state);
                        if (r == 0 && i == 50) rounds_done = 1;
                    }
                } catch (const csp::net::peer_error& e) {
                    EXPECT_TRUE(killed.load()) << "rank " << r << " failed before the kill: " << e.what();
                    after(state, e);
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

// Regression: with a rank killed during an allreduce, the two ranks waiting
// on it failed, and the third waited for ever on a rank that had failed and
// closed. Rank 3 runs in its own OS process and is killed mid-loop; ranks
// 0-2 must each fail with a peer_error within a few seconds.
TEST(collective_departures, a_rank_killed_mid_allreduce_fails_the_allreduce_on_every_other_rank) {
    static constexpr int n = 4;
    struct allreduces {
        int start(cc::net_communicator&) const { return 0; }
        void operator()(cc::net_communicator& comm, int) const { EXPECT_EQ(cc::allreduce(comm, 1, cc::sum{}), n); }
    };
    kill_a_rank_mid_loop("killed-allreduce", n, "allreduce-forever", allreduces{},
                         [](int, const csp::net::peer_error&) {});
}

// Regression: a rank whose call waited on a live rank, whose own call had
// met the lost one, waited until that rank closed its node, and then failed
// with its departure ("node 2 has left") rather than the loss: had the
// ranks kept their nodes open, it would have waited for ever. A peer's
// failure now revokes the stream at every rank of the call. Here every rank
// keeps its node open until all have failed, and each must name the
// killed rank.
TEST(collective_departures, a_rank_waiting_on_a_live_peer_fails_with_the_loss_that_peer_met) {
    static constexpr int n = 4;
    csp::net::nameserver ns;
    const pid_t pid = net_test::spawn_node(COLLECTIVES_NET_PEER, {"allreduce-forever"}, ns, "loss-relayed", n - 1, n);
    std::atomic<int> calls{0}, failed{0};
    std::atomic<bool> killed{false};
    std::vector<int> peer(n - 1, -1);
    std::vector<std::string> what(n - 1);
    std::vector<std::thread> ranks;
    for (int r = 0; r < n - 1; ++r)
        ranks.emplace_back([&, r] {
            csp::run([&] {
                csp::net::node self(net_test::options_for(ns, "loss-relayed", r, n));
                cc::net_communicator comm(self);
                try {
                    for (;;) {
                        EXPECT_EQ(cc::allreduce(comm, 1, cc::sum{}), n);
                        if (r == 0) ++calls;
                    }
                } catch (const csp::net::peer_error& e) {
                    EXPECT_TRUE(killed.load()) << "rank " << r << " failed before the kill: " << e.what();
                    peer[r] = e.peer();
                    what[r] = e.what();
                }
                ++failed;
                // Nobody closes before everyone failed (at most 10 s).
                const auto until = csp::clock::now() + 10s;
                while (failed.load() < n - 1 && csp::clock::now() < until) csp::sleep_for(1ms);
            });
        });
    while (calls.load() < 50) std::this_thread::sleep_for(1ms);
    killed = true;
    const auto start = std::chrono::steady_clock::now();
    ::kill(pid, SIGKILL);
    while (failed.load() < n - 1 && std::chrono::steady_clock::now() - start < 10s)
        std::this_thread::sleep_for(1ms);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << "a rank waited until the others closed";
    for (auto& t : ranks) t.join();
    for (int r = 0; r < n - 1; ++r) {
        EXPECT_EQ(peer[r], n - 1) << "rank " << r << ": " << what[r];
        EXPECT_NE(what[r].find("lost node 3 of job 'loss-relayed'"), std::string::npos) << what[r];
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status));
}

// A lost peer during a shared-variable force point: every other rank's read
// throws the peer's error, and reads after it throw it again.
TEST(collective_departures, a_rank_killed_mid_force_point_fails_every_shared_variable_read) {
    static constexpr int n = 3;
    struct variables {
        std::unique_ptr<cc::shared_group> g;
        std::unique_ptr<cc::shared<long>> x;
        long rounds = 0;
    };
    struct updates_and_reads {
        variables start(cc::net_communicator& comm) const {
            variables v;
            v.g = std::make_unique<cc::shared_group>(comm);
            v.x = std::make_unique<cc::shared<long>>(*v.g);
            return v;
        }
        void operator()(cc::net_communicator&, variables& v) const {
            *v.x += 1;
            EXPECT_EQ(v.x->get(), ++v.rounds * n);
        }
    };
    kill_a_rank_mid_loop("killed-shared", n, "shared-forever", updates_and_reads{},
                         [](variables& v, const csp::net::peer_error& e) {
                             try {
                                 (void)v.x->get();
                                 ADD_FAILURE() << "a read after the failure returned";
                             } catch (const csp::net::peer_error& again) {
                                 EXPECT_STREQ(again.what(), e.what());
                             }
                         });
}
