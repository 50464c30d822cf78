// Collectives at the same time on overlapping groups, collectives as
// processes with channel ends, and what a trace shows about parallel
// receive.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "collectives/collectives.hpp"
#include "collectives/mailbox.hpp"
#include "net/errors.hpp"
#include "csp/runtime.hpp"
#include "csp/timer.hpp"

namespace cc = csp::collectives;

TEST(concurrent_collectives, two_reductions_on_overlapping_groups_at_once) {
    for (std::size_t threads : {1u, 2u})
        csp::run([] {
            cc::run_local(6, [](cc::local_communicator& c) {
                const int me = c.rank();
                const std::vector<int> P1{0, 1, 2, 3, 4, 5}, R1{0, 3}, P2{1, 2, 3}, R2{4, 5};
                std::optional<long> a = me + 1, b;
                if (me >= 1 && me <= 3) b = me + 1;
                auto [r1, r2] = csp::par([&] { return cc::aspen_reduce(c, a, P1, R1, cc::sum{}, cc::stream{1}); },
                                         [&] { return cc::aspen_reduce(c, b, P2, R2, cc::product{}, cc::stream{2}); });
                EXPECT_EQ(r1.has_value(), me == 0 || me == 3);
                if (r1) { EXPECT_EQ(*r1, 21); }
                EXPECT_EQ(r2.has_value(), me == 4 || me == 5);
                if (r2) { EXPECT_EQ(*r2, 2 * 3 * 4); }
            });
        }, {.threads = threads});
}

TEST(concurrent_collectives, many_allreduces_on_separate_streams_never_mix) {
    csp::run([] {
        cc::run_local(5, [](cc::local_communicator& c) {
            auto results = csp::par_for(8, [&](std::size_t k) {
                long total = 0;
                for (int round = 0; round < 20; ++round)
                    total += cc::allreduce(c, long(c.rank() * 1000 + k), cc::sum{},
                                           cc::stream{static_cast<std::uint32_t>(k + 1)});
                return total;
            });
            for (std::size_t k = 0; k < results.size(); ++k) EXPECT_EQ(results[k], 20 * (10000 + 5 * long(k)));
        });
    }, {.threads = 2});
}

TEST(collectives_as_processes, participants_contribute_compute_then_collect) {
    csp::run([] {
        cc::reduction<long, cc::sum> total({0, 1, 2, 3}, {0, 2, 5});
        std::atomic<int> computed{0};
        csp::par(total.network(), [&] {
            csp::par_for(4, [&](std::size_t i) {
                auto in = total.contribution(static_cast<int>(i));
                for (long round = 0; round < 5; ++round) {
                    in.write(long(i) * round);  // returns at once: the end holds one value
                    computed.fetch_add(1);      // computation overlapping the reduction
                    if (i == 0 || i == 2) { EXPECT_EQ(total.result(static_cast<int>(i)).read(), 6 * round); }
                }
                in.retire();
            });
        }, [&] {
            // Rank 5 contributes nothing and receives every round.
            auto out = total.result(5);
            for (long round = 0; round < 5; ++round) EXPECT_EQ(out.read(), 6 * round);
            EXPECT_THROW(out.read(), csp::retired_error);
        });
        EXPECT_EQ(computed.load(), 20);
    }, {.threads = 2});
}

TEST(collectives_as_processes, the_papers_figure_5) {
    // r1 sums all four ranks and delivers to 0 and 2; r2 multiplies 1 and 2
    // and delivers to 3. Both run at once.
    csp::run([] {
        cc::reduction<long, cc::sum> r1({0, 1, 2, 3}, {0, 2}, {}, "r1");
        cc::reduction<long, cc::product> r2({1, 2}, {3}, {}, "r2");
        std::vector<long> got(4, -1), got2(4, -1);
        csp::par(r1.network(), r2.network(), [&] {
            csp::par_for(4, [&](std::size_t i) {
                const int me = static_cast<int>(i);
                const long x = me + 2;  // 2, 3, 4, 5
                r1.contribution(me).write(x);
                if (me == 1 || me == 2) r2.contribution(me).write(x);
                if (me == 0 || me == 2) got[i] = r1.result(me).read();
                if (me == 3) got2[i] = r2.result(me).read();
                r1.contribution(me).retire();
                if (me == 1 || me == 2) r2.contribution(me).retire();
            });
        });
        EXPECT_EQ(got, (std::vector<long>{14, -1, 14, -1}));
        EXPECT_EQ(got2, (std::vector<long>{-1, -1, -1, 12}));
    });
}

// Regression: a receiver that poisoned its result end (to shut down) made
// its rank of the network throw, and the other ranks waited in the next
// round for a rank that was gone: every process blocked (a deadlock report),
// or a hang beside any process still running. A rank that fails now fails
// the others' receives, every rank poisons its own ends, and the network
// ends as poison spreads: the other receivers see poisoned_error.
TEST(collectives_as_processes, a_receiver_that_poisons_its_result_end_stops_the_whole_network) {
    for (const std::size_t threads : {1, 2}) {
        int results_at_1 = 0;
        bool poisoned_at_1 = false;
        csp::run(
            [&] {
                cc::reduction<int, cc::sum> r({0, 1}, {0, 1});
                csp::par(r.network(),
                         [in = r.contribution(0), out = r.result(0)] {
                             in.write(1);
                             EXPECT_EQ(out.read(), 2);
                             out.poison();  // no more results wanted
                             try {
                                 in.write(5);
                             } catch (const csp::poisoned_error&) {
                             }
                         },
                         [&, in = r.contribution(1), out = r.result(1)] {
                             try {
                                 for (;;) {
                                     in.write(1);
                                     out.read();
                                     ++results_at_1;
                                 }
                             } catch (const csp::poisoned_error&) {
                                 poisoned_at_1 = true;
                             }
                         });
            },
            {.threads = threads});
        EXPECT_TRUE(poisoned_at_1) << threads << " threads";
        EXPECT_EQ(results_at_1, 2) << threads << " threads";  // rank 0 failed writing round 2's result
    }
}

TEST(collectives_as_processes, bad_wiring_is_named) {
    cc::reduction<int, cc::sum> r({0, 1}, {1});
    EXPECT_THROW(r.contribution(2), csp::usage_error);
    EXPECT_THROW(r.result(0), csp::usage_error);
    EXPECT_THROW((cc::reduction<int, cc::sum>({}, {1})), csp::usage_error);
}

namespace {

// Root 0 of 8 receives from its tree children 1, 2 and 4. Rank 1 is held
// back until 2 and 4 have sent, and 5 ms more, so that the root has taken
// in what they sent (a process woken by a message runs at once only when
// its waker gives up the core); returns the order of the root's receives.
template <class Reduce>
std::vector<int> root_receive_order(Reduce reduce) {
    cc::trace_log log;
    csp::run([&] {
        csp::channel<int> sent{"sent", csp::buffer::fifo(2)};
        cc::run_local(8, [&](cc::local_communicator& c) {
            cc::traced tc(c, log);
            if (c.rank() == 1) {
                sent.reader().read();
                sent.reader().read();
                csp::sleep_for(std::chrono::milliseconds(5));
            }
            reduce(tc);
            if (c.rank() == 2 || c.rank() == 4) sent.writer().write(c.rank());
        });
    });
    std::vector<int> order;
    for (const auto& e : log.of_kind(cc::trace_event::kind::receive))
        if (e.rank == 0) order.push_back(e.peer);
    return order;
}

}  // namespace

TEST(parallel_receive, is_not_held_up_by_a_late_first_peer) {
    auto order = root_receive_order([](auto& c) { cc::reduce_binomial_parallel(c, 1, cc::sum{}, 0); });
    ASSERT_EQ(order.size(), 3u);
    EXPECT_EQ(order.back(), 1);  // 2 and 4 were received before the late 1
    auto chain = root_receive_order([](auto& c) { cc::reduce_chain(c, 1, cc::sum{}, 0); });
    ASSERT_EQ(chain.size(), 3u);
    EXPECT_EQ(chain.back(), 1);
}

TEST(parallel_receive, the_sequential_variant_waits_for_the_first_peer) {
    auto order = root_receive_order([](auto& c) { cc::reduce_binomial(c, 1, cc::sum{}, 0); });
    EXPECT_EQ(order, (std::vector<int>{1, 2, 4}));
}

TEST(tracing, records_the_algorithm_and_every_message) {
    cc::trace_log log;
    csp::run([&] {
        cc::run_local(6, [&](cc::local_communicator& c) {
            cc::traced tc(c, log);
            EXPECT_EQ(cc::allreduce_butterfly(tc, 1, cc::sum{}), 6);
        });
    });
    auto algs = log.algorithms();
    EXPECT_EQ(algs, std::vector<std::string>(6, "allreduce butterfly"));
    // Six ranks: fold 2, exchanges 4 + 4, unfold 2.
    EXPECT_EQ(log.of_kind(cc::trace_event::kind::send).size(), 12u);
    EXPECT_EQ(log.of_kind(cc::trace_event::kind::receive).size(), 12u);
}

TEST(local_group, a_failing_rank_fails_the_others_receives_instead_of_hanging) {
    EXPECT_THROW(csp::run([] {
                     cc::run_local(4, [](cc::local_communicator& c) {
                         if (c.rank() == 2) throw std::runtime_error("rank 2 broke");
                         cc::barrier_binomial(c);
                     });
                 }),
                 std::runtime_error);
}

// Regression: ranks as fibers that each named itself the root of a
// broadcast (by its message algorithm's name) each returned its own value,
// and run_local returned those different answers in silence: every message
// no call took was dropped with the group. run_local now fails, naming it.
TEST(local_group, ranks_naming_different_roots_get_an_error_naming_the_message_no_call_took) {
    csp::run([] {
        try {
            cc::run_local(2, [](cc::local_communicator& c) {
                return cc::broadcast_binomial(c, 10.0 + c.rank(), c.rank());
            });
            ADD_FAILURE() << "no error";
        } catch (const csp::usage_error& e) {
            EXPECT_EQ(std::string(e.what()),
                      "run_local: every rank returned, and rank 0 is closing with 1 message no collective call took: "
                      "rank 1's message with tag (stream 0, call 0 of broadcast by binomial, step 0) (a peer made a "
                      "call this rank did not make, or the ranks named different roots for one call or chose "
                      "different algorithms for it): an answer may be wrong");
        }
    });
}

// A call that failed at every rank leaves messages behind that are expected
// (revocation.hpp): run_local returns the ranks' results.
TEST(local_group, a_failed_calls_messages_are_no_error_once_every_rank_returned) {
    const auto sums = csp::run([] {
        return cc::run_local(4, [](cc::local_communicator& c) {
            try {
                (void)cc::allreduce_butterfly(c, std::vector<double>(c.rank() == 1 ? 3 : 4, 1.0), cc::sum{});
            } catch (const csp::usage_error&) {
            }
            return cc::allreduce(c, 1, cc::sum{}, cc::stream{1});
        });
    });
    EXPECT_EQ(sums, (std::vector<int>{4, 4, 4, 4}));
}

TEST(local_group, a_type_mismatch_is_named) {
    csp::run([] {
        try {
            cc::run_local(2, [](cc::local_communicator& c) {
                if (c.rank() == 0) c.send(1, cc::tag(0, 0), 1.5);
                else c.receive<int>(0, cc::tag(0, 0));
            });
            ADD_FAILURE() << "no error";
        } catch (const csp::usage_error& e) {
            EXPECT_NE(std::string(e.what()).find("same type"), std::string::npos) << e.what();
        }
    });
}

// A receive from any of a set of sources (a group's members) fails for a
// failed member only: a posted one is not woken by another source's
// failure and still takes its message; a later one fails at once once a
// member failed; a plain receive from any source fails for either.
TEST(mailbox_failures, a_receive_from_any_member_fails_only_for_a_member) {
    cc::mailbox<long> box;
    const std::vector<int> members{1, 2};
    long got = 0;
    csp::run([&] {
        csp::par([&] { got = box.take(cc::any_source, 7, members).body; },
                 [&] {
                     csp::yield();  // the receive is posted
                     box.fail(3, std::make_exception_ptr(std::runtime_error("rank 3 lost")));
                     csp::yield();
                     box.deliver(2, 7, 42);
                 });
    });
    EXPECT_EQ(got, 42);
    EXPECT_THROW((void)box.take(cc::any_source, 8), std::runtime_error);
    box.deliver(1, 8, 5);
    EXPECT_EQ(box.take(cc::any_source, 8, members).body, 5);
    box.fail(2, std::make_exception_ptr(std::runtime_error("rank 2 lost")));
    try {
        (void)box.take(cc::any_source, 9, members);
        ADD_FAILURE() << "a member failed, and the receive went on";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "rank 2 lost");
    }
    std::string woken;
    csp::run([&] {
        csp::par(
            [&] {
                try {
                    (void)box.take(cc::any_source, 10, std::vector<int>{4, 5});
                } catch (const std::runtime_error& e) {
                    woken = e.what();
                }
            },
            [&] {
                csp::yield();
                box.fail(5, std::make_exception_ptr(std::runtime_error("rank 5 lost")));
            });
    });
    EXPECT_EQ(woken, "rank 5 lost");
}

// Regression: every forget() (one per task graph run that failed, and now
// one per run) kept an entry for the mailbox's life. A forgotten call's
// messages are dropped, those here and those to come, and the other calls'
// stay; the last 256 calls forgotten are remembered: of calls 0 and 2-299,
// 0-43 are let go, and a message of one is kept (and reported) again.
TEST(mailbox_forget, drops_a_forgotten_calls_messages_and_remembers_the_last_256_calls) {
    cc::mailbox<long> box;
    box.deliver(1, cc::tag(0, 0).bits(), 1);
    box.deliver(1, cc::tag(0, 0).step(1).bits(), 2);
    box.deliver(1, cc::tag(0, 1).bits(), 3);
    box.forget(cc::tag(0, 0));
    EXPECT_EQ(box.unclaimed(), 1u);
    box.deliver(2, cc::tag(0, 0).step(2).bits(), 4);  // late: dropped
    EXPECT_EQ(box.unclaimed(), 1u);
    EXPECT_EQ(box.take(1, cc::tag(0, 1).bits()).body, 3);
    for (std::uint32_t call = 2; call < 300; ++call) box.forget(cc::tag(0, call));
    box.deliver(2, cc::tag(0, 299).bits(), 5);  // the latest forgotten: dropped
    box.deliver(2, cc::tag(0, 44).bits(), 6);   // the oldest still remembered: dropped
    EXPECT_EQ(box.unclaimed(), 0u);
    box.deliver(2, cc::tag(0, 0).bits(), 7);  // let go: kept
    box.deliver(2, cc::tag(0, 43).bits(), 8);
    EXPECT_EQ(box.unclaimed(), 2u);
    box.deliver(2, cc::tag(0, 300).bits(), 9);  // a later call: kept
    EXPECT_EQ(box.take(2, cc::tag(0, 300).bits()).body, 9);
}

// Regression: a forgotten call was remembered until 256 more were
// forgotten, however many calls the stream made meanwhile. Sequences count
// modulo 2^28, and modulo 2^20 in a hybrid job (tag.hpp): a task graph run,
// then about a million collective calls on the default stream, and the
// call whose number came round to the run's had its messages dropped and
// waited for ever. A message 2^16 calls or more from a forgotten call, on
// either side (the hybrid job's numbers after they wrapped), forgets it for
// good; one nearer does not.
TEST(mailbox_forget, a_forgotten_calls_number_coming_round_again_is_a_new_call) {
    constexpr std::uint32_t far = 1u << 16, hybrid_last = (1u << 20) - 3;
    cc::mailbox<long> box;
    box.forget(cc::tag(0, 5));
    box.forget(cc::tag(1, 5));  // another stream
    box.deliver(1, cc::tag(0, 5 + far - 1).bits(), 1);  // near call 5: it stays forgotten
    box.deliver(2, cc::tag(0, 5).bits(), 2);             // dropped
    EXPECT_EQ(box.unclaimed(), 1u);
    box.deliver(1, cc::tag(0, 5 + far).bits(), 3);  // far from it: forgotten for good
    box.deliver(2, cc::tag(0, 5).bits(), 4);         // a new call 5: kept
    EXPECT_EQ(box.take(2, cc::tag(0, 5).bits()).body, 4);
    EXPECT_EQ(box.unclaimed(), 2u);

    box.forget(cc::tag(0, hybrid_last));
    box.deliver(2, cc::tag(0, hybrid_last).bits(), 5);  // dropped
    EXPECT_EQ(box.unclaimed(), 2u);
    box.deliver(1, cc::tag(0, 2).bits(), 6);  // the numbers wrapped: far below it
    box.deliver(2, cc::tag(0, hybrid_last).bits(), 7);  // a new call: kept
    EXPECT_EQ(box.take(2, cc::tag(0, hybrid_last).bits()).body, 7);
    EXPECT_EQ(box.unclaimed(), 3u);

    box.deliver(2, cc::tag(1, 5).bits(), 8);  // stream 1's call 5 is still forgotten: dropped
    EXPECT_EQ(box.unclaimed(), 3u);
}

// Messages of many calls waiting at once (ranks that ran ahead): each
// receive gets its own (source, tag)'s, the first sent first; one from any
// source gets the first of its tag to arrive; the count of waiting messages
// follows. (They are kept by tag, so that a receive does not look through
// every later call's messages: a loop of recursive-doubling scans at 8
// ranks spent 16% of its time there.)
// Regression: a receive left waiting by calls that drew different numbers
// of tags (rank 0's allgather against the others' allreduce) was reported
// with no word of the other collective, whose messages sat under an
// earlier call number. The report lists them now.
TEST(mailbox_report, a_blocked_receive_lists_the_messages_of_earlier_calls_no_call_took) {
    cc::mailbox<long> box;
    const auto allreduce = cc::tag(0, 1).of_call(cc::call_code("allreduce"));
    box.deliver(2, allreduce.bits(), 1);
    box.deliver(1, allreduce.step(1).bits(), 1);
    box.deliver(1, cc::tag(3, 0).bits(), 5);  // another stream: not listed
    std::string report;
    try {
        csp::run([&] { (void)box.take(2, cc::tag(0, 2).of_call(cc::call_code("gather")).bits()); });
    } catch (const csp::deadlock_error& e) {
        report = e.what();
    }
    EXPECT_NE(report.find("with tag (stream 0, call 2 of gather, step 0); no call took rank "), std::string::npos)
        << report;
    EXPECT_NE(report.find("rank 2's allreduce (call 1)"), std::string::npos) << report;
    EXPECT_NE(report.find("rank 1's allreduce (call 1)"), std::string::npos) << report;
    EXPECT_NE(report.find(": the ranks may have made different collective calls"), std::string::npos) << report;
    EXPECT_EQ(report.find("stream 3"), std::string::npos) << report;
    EXPECT_EQ(report.find("rank 1's message"), std::string::npos) << report;

    // Peers that made other calls often finish and leave: the departure a
    // receive then throws says the same (rank 0's allgather against the
    // others' broadcast from rank 1 over TCP: "node 1 ... has left ...
    // while this rank waited for ... (stream 0, call 1 of gather, step 0)",
    // with rank 1's broadcast unclaimed under call 0).
    box.deliver(1, cc::tag(0, 2).of_call(cc::call_code("broadcast")).bits(), 7);
    box.fail(1, std::make_exception_ptr(csp::net::peer_error(1, "node 1 has left (it closed its node)")));
    try {
        (void)box.take(1, cc::tag(0, 3).of_call(cc::call_code("gather")).bits());
        ADD_FAILURE() << "received from a peer that left";
    } catch (const csp::net::peer_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("node 1 has left (it closed its node) while this rank waited for a message from rank 1 "
                            "with tag (stream 0, call 3 of gather, step 0); no call took "),
                  std::string::npos)
            << what;
        EXPECT_NE(what.find("rank 1's broadcast (call 2)"), std::string::npos) << what;
        EXPECT_NE(what.find(": the ranks may have made different collective calls"), std::string::npos) << what;
    }
}

// Regression: a receive for which another collective's message came, or
// another algorithm's (ranks whose vector lengths lay across a bound of the
// selection table), waited until the job-wide deadlock report or a peer's
// departure ended it. It throws at once now, naming both calls, whether
// the message came before the receive or while it waited, and before a
// departure of that peer. The message stays; one of the call's own tag is
// still received, and tags no collective drew never conflict.
TEST(mailbox_other_call, a_receive_whose_call_met_another_collective_or_algorithm_throws_naming_both) {
    const auto of = [](std::uint32_t call, std::string_view collective, std::uint8_t code) {
        return cc::tag(0, call).of_call(cc::call_code(collective)).of_algorithm(code);
    };
    const auto butterfly = cc::allreduce_butterfly_fn::info.code;
    const auto rabenseifner = cc::allreduce_rabenseifner_fn::info.code;
    cc::mailbox<long> box;
    box.deliver(1, of(2, "broadcast", cc::broadcast_binomial_fn::info.code).bits(), 7);
    box.fail(1, std::make_exception_ptr(csp::net::peer_error(1, "node 1 has left (it closed its node)")));
    try {
        (void)box.take(1, of(2, "allreduce", butterfly).bits());
        ADD_FAILURE() << "no error";
    } catch (const csp::usage_error& e) {
        EXPECT_EQ(std::string(e.what()),
                  "allreduce butterfly: rank 1 met this call with a call of broadcast by binomial (its message with "
                  "tag (stream 0, call 2 of broadcast by binomial, step 0)): every rank must make the same "
                  "collective calls in the same order");
    }
    EXPECT_EQ(box.unclaimed(), 1u);

    std::string woken;
    csp::run([&] {
        csp::par(
            [&] {
                try {
                    (void)box.take(3, of(4, "allreduce", butterfly).bits());
                } catch (const csp::usage_error& e) {
                    woken = e.what();
                }
            },
            [&] {
                csp::yield();  // the receive is posted
                box.deliver(2, of(4, "allreduce", butterfly).step(1).bits(), 1);  // another step: no conflict
                box.deliver(3, cc::tag(0, 4).step(2).bits(), 1);                 // drawn by no collective
                csp::yield();
                box.deliver(2, of(4, "allreduce", rabenseifner).step(1).bits(), 1);
            });
    });
    EXPECT_EQ(woken,
              "allreduce butterfly: rank 2 met this call with allreduce by rabenseifner (its message with tag "
              "(stream 0, call 4 of allreduce by rabenseifner, step 1)): the ranks chose different algorithms for "
              "one call, as they do where their values' sizes differ across a bound of the selection table (the "
              "vectors of an element-wise fold and the buffers of broadcast_into must have one length at every "
              "rank)");
    EXPECT_EQ(box.unclaimed(), 4u);

    // What came for the receive's own tag is received all the same.
    box.deliver(3, of(4, "allreduce", butterfly).bits(), 9);
    EXPECT_EQ(box.take(3, of(4, "allreduce", butterfly).bits()).body, 9);
    EXPECT_EQ(box.take(3, cc::tag(0, 4).step(2).bits()).body, 1);
    EXPECT_THROW((void)box.take(2, of(4, "allreduce", butterfly).step(3).bits()), csp::usage_error);
}

// Ranks of one process whose vectors for one allreduce choose different
// algorithms (named here, as the table does across a bound; each draws
// one tag for it, so the calls stay in line): every rank
// throws, at once, its own error naming both or the revocation of a rank
// that met it; the stream's next call that passes messages is refused
// (or, its messages here already, right); another stream still works.
// Under one and two worker threads.
TEST(mailbox_other_call, ranks_running_different_algorithms_for_one_call_all_throw_and_go_on_in_another_stream) {
    for (std::size_t threads : {1u, 2u}) {
        const auto sums = csp::run(
            [] {
                return cc::run_local(4, [](cc::local_communicator& c) {
                    std::string error;
                    try {
                        const std::vector<double> v(64, 1.0);
                        if (c.rank() == 0) (void)cc::allreduce_butterfly(c, v, cc::sum{});
                        else (void)cc::allreduce_rabenseifner(c, v, cc::sum{});
                    } catch (const csp::usage_error& e) {
                        error = e.what();
                    }
                    EXPECT_NE(error.find(" met this call with allreduce by "), std::string::npos)
                        << "rank " << c.rank() << ": " << error;
                    EXPECT_NE(error.find("the ranks chose different algorithms for one call"), std::string::npos)
                        << error;
                    try {  // revoked, unless its messages were here already (then the answer is right)
                        EXPECT_EQ(cc::allreduce_butterfly(c, 1, cc::sum{}), 4);
                    } catch (const cc::stream_revoked&) {
                    }
                    return cc::allreduce(c, 1, cc::sum{}, cc::stream{1});
                });
            },
            {.threads = threads});
        EXPECT_EQ(sums, (std::vector<int>{4, 4, 4, 4})) << threads << " threads";
    }
}

TEST(mailbox_order, messages_of_many_calls_are_taken_by_source_and_tag_first_sent_first) {
    cc::mailbox<long> box;
    constexpr int calls = 500;
    for (int t = 0; t < calls; ++t)
        for (int source : {2, 0, 1}) {
            box.deliver(source, static_cast<std::uint64_t>(t), t * 100 + source * 10);
            if (source == 1) box.deliver(source, static_cast<std::uint64_t>(t), t * 100 + source * 10 + 1);
        }
    EXPECT_EQ(box.unclaimed(), static_cast<std::size_t>(calls * 4));
    std::size_t left = calls * 4;
    for (int t = calls - 1; t >= 0; t -= 2) {  // the latest calls first
        const auto tg = static_cast<std::uint64_t>(t);
        EXPECT_EQ(box.take(1, tg).body, t * 100 + 10);
        EXPECT_EQ(box.take(cc::any_source, tg).body, t * 100 + 20);  // rank 2's came first
        EXPECT_EQ(box.take(1, tg).body, t * 100 + 11);
        EXPECT_EQ(box.take(0, tg).body, t * 100);
        left -= 4;
        EXPECT_EQ(box.unclaimed(), left);
    }
    for (int t = 0; t < calls; t += 2) {
        const auto tg = static_cast<std::uint64_t>(t);
        EXPECT_EQ(box.take(0, tg).body, t * 100);
        EXPECT_EQ(box.take(cc::any_source, tg).body, t * 100 + 20);
        EXPECT_EQ(box.take(cc::any_source, tg).body, t * 100 + 10);
        EXPECT_EQ(box.take(cc::any_source, tg).body, t * 100 + 11);
    }
    EXPECT_EQ(box.unclaimed(), 0u);
}

// A tag's map entry, emptied by its last receive, is kept and reused for a
// later tag (no node allocated per message of a loop of collectives): waves
// of more tags than are kept spare, each wave delivered while half of the
// one before still waits, every value taken under its own tag.
TEST(mailbox_order, entries_of_received_tags_are_reused_for_later_tags) {
    cc::mailbox<long> box;
    constexpr int per_wave = 150, waves = 6;
    auto value = [](int t, int source) { return long{t} * 10 + source; };
    auto deliver_wave = [&](int w) {
        for (int t = w * per_wave; t < (w + 1) * per_wave; ++t)
            for (int source : {1, 0}) box.deliver(source, static_cast<std::uint64_t>(t), value(t, source));
    };
    auto take_tags = [&](int w, int parity) {
        for (int t = w * per_wave + parity; t < (w + 1) * per_wave; t += 2) {
            const auto tg = static_cast<std::uint64_t>(t);
            EXPECT_EQ(box.take(0, tg).body, value(t, 0));
            EXPECT_EQ(box.take(cc::any_source, tg).body, value(t, 1));
        }
    };
    deliver_wave(0);
    for (int w = 0; w < waves; ++w) {
        take_tags(w, 1);
        if (w + 1 < waves) deliver_wave(w + 1);
        take_tags(w, 0);
        EXPECT_EQ(box.unclaimed(), w + 1 < waves ? static_cast<std::size_t>(per_wave * 2) : 0u);
    }
}

// A receive that finds its message already there does not switch; a loop of
// them (here one process feeding its own mailbox) must still let the other
// processes of its worker run (csp/preemption.hpp). Every message counted.
TEST(mailbox_turns, a_loop_of_receives_that_never_wait_lets_a_sleeper_run) {
    constexpr long limit = 5'000'000;
    for (std::size_t threads : {1u, 2u}) {
        cc::mailbox<long> box;
        std::atomic<bool> woke{false};
        long received = 0;
        csp::run([&] {
            csp::par(
                [&] {
                    while (!woke.load(std::memory_order_relaxed) && received < limit) {
                        box.deliver(0, 7, received);
                        ASSERT_EQ(box.take(0, 7).body, received);
                        ++received;
                    }
                },
                [&] {
                    csp::sleep_for(std::chrono::milliseconds(1));
                    woke = true;
                });
        }, {.threads = threads});
        EXPECT_TRUE(woke.load()) << threads << " threads";
        EXPECT_LT(received, limit) << threads << " threads: the receiving loop never let the sleeper run";
        EXPECT_EQ(box.unclaimed(), 0u);
    }
}
