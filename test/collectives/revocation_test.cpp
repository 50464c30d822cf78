// A collective call that fails at one rank fails at every rank
// (collectives/revocation.hpp), for ranks as fibers of one runtime; the
// same over TCP is net_test.cpp's net_bad_input.
#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "collectives/collectives.hpp"
#include "csp/runtime.hpp"

namespace {

namespace cc = csp::collectives;

// What each of 4 ranks saw: the failed call's error, then what a later call
// of the same stream that receives gave (a ring allgather: every rank
// receives), then the sum of an allreduce on another stream. A later
// receive of the stream fails unless its message is already there (a rank
// may send before it hears of the failure); then the answer is right.
struct outcome {
    std::vector<std::string> errors = std::vector<std::string>(4);
    std::atomic<int> revoked_later{0};
    std::atomic<int> right_later{0};
    std::atomic<int> answers{0};
    std::atomic<int> other_stream_sums{0};

    void expect_later_calls_refused_or_right() const {
        EXPECT_GE(revoked_later.load(), 1);
        EXPECT_EQ(revoked_later.load() + right_later.load(), 4);
        EXPECT_EQ(other_stream_sums.load(), 16);
    }
};

template <class Bad>
void run_with(outcome& o, Bad bad) {
    csp::run([&] {
        cc::run_local(4, [&](cc::local_communicator& c) {
            try {
                bad(c);
                ++o.answers;
            } catch (const std::exception& e) {
                o.errors[static_cast<std::size_t>(c.rank())] = e.what();
            }
            try {
                if (cc::allgather_ring(c, c.rank()) == std::vector<int>{0, 1, 2, 3}) ++o.right_later;
            } catch (const cc::stream_revoked&) {
                ++o.revoked_later;
            }
            o.other_stream_sums += cc::allreduce(c, 1, cc::sum{}, cc::stream{1});
        });
    });
}

bool names(const std::string& error, const std::string& what) { return error.find(what) != std::string::npos; }

// Regression: only the root saw that its scatter held too few values; it
// threw, and the other ranks waited for their values until the runtime's
// deadlock report.
TEST(revoked_stream, a_scatter_root_with_too_few_values_fails_every_rank) {
    outcome o;
    run_with(o, [](cc::local_communicator& c) {
        (void)cc::scatter(c, std::vector<int>(c.rank() == 0 ? 3 : 0, 5), 0);
    });
    EXPECT_EQ(o.answers.load(), 0);
    EXPECT_TRUE(names(o.errors[0], "scatter: the root holds 3 values for 4 ranks")) << o.errors[0];
    for (int r = 1; r < 4; ++r)
        EXPECT_TRUE(names(o.errors[r], "rank 0's scatter (call 0 of stream 0) failed: scatter: the root holds 3"))
            << o.errors[r];
    o.expect_later_calls_refused_or_right();
}

// Regression: an algorithm called by its own name ran unguarded: the rank
// that failed threw, and the others waited for its messages until the
// runtime's deadlock report. Three of them, each with one rank's bad input.
TEST(revoked_stream, an_algorithm_called_by_its_name_fails_every_rank_as_its_plain_call_does) {
    outcome scatter;
    run_with(scatter, [](cc::local_communicator& c) {
        (void)cc::scatter_parallel(c, std::vector<int>(c.rank() == 0 ? 3 : 0, 5), 0);
    });
    EXPECT_EQ(scatter.answers.load(), 0);
    EXPECT_TRUE(names(scatter.errors[0], "scatter: the root holds 3 values for 4 ranks")) << scatter.errors[0];
    for (int r = 1; r < 4; ++r)
        EXPECT_TRUE(names(scatter.errors[r], "rank 0's scatter (call 0 of stream 0) failed")) << scatter.errors[r];
    scatter.expect_later_calls_refused_or_right();

    // A ring allreduce (a reduce_scatter, then an allgather, each drawing
    // tags of its own) whose rank 0 holds 30 values and the others 40: the
    // ranks that receive a block of the wrong length fail in the first
    // half; the others hear of it, whichever half they wait in.
    outcome ring;
    run_with(ring, [](cc::local_communicator& c) {
        (void)cc::allreduce_ring(c, std::vector<double>(c.rank() == 0 ? 30 : 40, 1.0), cc::sum{});
    });
    EXPECT_EQ(ring.answers.load(), 0);
    int own = 0, heard = 0;
    for (const auto& e : ring.errors) {
        if (names(e, "'s allreduce (call 0 of stream 0) failed: reduce_scatter: rank 0 sent block"))
            ++heard;
        else if (names(e, "reduce_scatter: rank 0 sent block"))
            ++own;
    }
    EXPECT_GE(own, 1);
    EXPECT_EQ(own + heard, 4) << ring.errors[0] << '\n' << ring.errors[1] << '\n' << ring.errors[2] << '\n'
                              << ring.errors[3];
    ring.expect_later_calls_refused_or_right();

    // A chain reduce whose rank 2 names a root outside the group.
    outcome chain;
    run_with(chain, [](cc::local_communicator& c) { (void)cc::reduce_chain(c, 1, cc::sum{}, c.rank() == 2 ? 9 : 0); });
    EXPECT_TRUE(names(chain.errors[2], "root 9 is outside the group of 4")) << chain.errors[2];
    chain.expect_later_calls_refused_or_right();
}

// Regression: a call of a revoked stream that only sent (a broadcast's
// root) returned, and a rank that heard of a failure first sent its next
// call's messages under numbers at which others still waited in the failed
// call: over TCP, a reduce_scatter's rank 3 took rank 2's next allreduce
// for another collective's call before rank 0's revocation reached it. A
// rank that knows its stream revoked now sends nothing of a later call:
// the send throws the revocation, at every rank, under one and two worker
// threads; another stream goes on.
TEST(revoked_stream, a_rank_that_knows_of_the_failure_sends_nothing_of_a_later_call_of_the_stream) {
    for (std::size_t threads : {1u, 2u}) {
        std::atomic<int> refused{0}, sums{0};
        csp::run(
            [&] {
                cc::run_local(4, [&](cc::local_communicator& c) {
                    try {
                        (void)cc::scatter(c, std::vector<int>(c.rank() == 0 ? 3 : 0, 5), 0);
                        ADD_FAILURE() << "the scatter returned";
                    } catch (const cc::stream_revoked&) {
                    } catch (const csp::usage_error&) {
                        EXPECT_EQ(c.rank(), 0);
                    }
                    try {
                        (void)cc::broadcast_binomial(c, 1.5, c.rank());  // every rank only sends
                        ADD_FAILURE() << "rank " << c.rank() << "'s broadcast returned";
                    } catch (const cc::stream_revoked& e) {
                        EXPECT_TRUE(names(e.what(), "rank 0's scatter (call 0 of stream 0) failed: scatter: the root "
                                                    "holds 3 values for 4 ranks"))
                            << e.what();
                        ++refused;
                    }
                    sums += cc::allreduce(c, 1, cc::sum{}, cc::stream{1});
                });
            },
            {.threads = threads});
        EXPECT_EQ(refused.load(), 4) << threads << " threads";
        EXPECT_EQ(sums.load(), 16) << threads << " threads";
    }
}

// Regression: one rank's alltoall with a value too many; the others waited
// for its values.
TEST(revoked_stream, one_ranks_alltoall_with_too_many_values_fails_every_rank) {
    outcome o;
    run_with(o, [](cc::local_communicator& c) {
        (void)cc::alltoall(c, std::vector<int>(c.rank() == 1 ? 5 : 4, c.rank()));
    });
    EXPECT_EQ(o.answers.load(), 0);
    for (int r : {0, 2, 3})
        EXPECT_TRUE(names(o.errors[r], "rank 1's alltoall (call 0 of stream 0) failed: alltoall: rank 1 gave 5"))
            << o.errors[r];
    o.expect_later_calls_refused_or_right();
}

// Regression: vectors of different lengths, whose fold only the
// reduce_scatter's root makes; the others waited in its scatter step.
TEST(revoked_stream, vectors_of_different_lengths_fail_every_rank_of_a_reduce_scatter) {
    outcome o;
    run_with(o, [](cc::local_communicator& c) {
        (void)cc::reduce_scatter_block(c, std::vector<double>(c.rank() == 0 ? 8 : 12, 1.0), cc::sum{});
    });
    EXPECT_EQ(o.answers.load(), 0);
    for (int r = 0; r < 4; ++r)
        EXPECT_TRUE(names(o.errors[r], "vectors of different lengths (8 and 12)")) << o.errors[r];
    o.expect_later_calls_refused_or_right();
}

// A length that does not split into blocks at one rank only.
TEST(revoked_stream, one_ranks_length_that_does_not_split_fails_every_rank_of_a_reduce_scatter_block) {
    outcome o;
    run_with(o, [](cc::local_communicator& c) {
        (void)cc::reduce_scatter_block(c, std::vector<double>(c.rank() == 2 ? 6 : 8, 1.0), cc::sum{});
    });
    EXPECT_EQ(o.answers.load(), 0);
    for (int r : {0, 1, 3})
        EXPECT_TRUE(names(o.errors[r], "rank 2's reduce_scatter (call 0 of stream 0) failed: reduce_scatter_block: "
                                       "rank 2's 6 elements do not split"))
            << o.errors[r];
    o.expect_later_calls_refused_or_right();
}

// Regression: an Aspen participant that gave no value threw; the receiver
// waited for the reduction.
TEST(revoked_stream, an_aspen_participant_without_a_value_fails_the_receiver) {
    outcome o;
    run_with(o, [](cc::local_communicator& c) {
        (void)cc::aspen_reduce(c, c.rank() == 1 ? std::nullopt : std::optional<int>(c.rank()), {0, 1, 2}, {0},
                               cc::sum{});
    });
    EXPECT_TRUE(names(o.errors[1], "rank 1 is a participant of this reduction but gave no value")) << o.errors[1];
    EXPECT_TRUE(names(o.errors[0], "rank 1's reduce (call 0 of stream 0) failed")) << o.errors[0];
    EXPECT_TRUE(names(o.errors[3], "rank 3 gave a value to a reduction it does not take part in")) << o.errors[3];
    o.expect_later_calls_refused_or_right();
}

// Regression: a root named by one rank only (outside the group there):
// that rank threw, the others waited for their root's value.
TEST(revoked_stream, a_root_that_one_rank_names_outside_the_group_fails_every_rank) {
    outcome o;
    run_with(o, [](cc::local_communicator& c) { (void)cc::gather(c, c.rank(), c.rank() == 0 ? 7 : 0); });
    EXPECT_TRUE(names(o.errors[0], "root 7 is outside the group of 4")) << o.errors[0];
    // Rank 0 is the others' root: a rank that only sends its value returns;
    // one that waits for a child's hears of the failure.
    for (int r = 1; r < 4; ++r)
        EXPECT_TRUE(o.errors[r].empty() || names(o.errors[r], "rank 0's gather (call 0 of stream 0) failed: root 7"))
            << o.errors[r];
    o.expect_later_calls_refused_or_right();
}

// Regression: a shift in which one rank names a source outside the group:
// it threw before it sent, and its neighbour waited for its row.
TEST(revoked_stream, a_shift_in_which_one_rank_names_a_bad_source_fails_the_rank_waiting_for_its_row) {
    outcome o;
    run_with(o, [](cc::local_communicator& c) {
        const int r = c.rank();
        std::vector<double> row(8, r), ghost(8);
        (void)cc::sendrecv(c, std::span<const double>(row), (r + 1) % 4, std::span<double>(ghost),
                           r == 1 ? 9 : (r + 3) % 4);
    });
    EXPECT_TRUE(names(o.errors[1], "sendrecv: source rank 9 is outside the group of 4")) << o.errors[1];
    EXPECT_TRUE(names(o.errors[2], "rank 1's sendrecv (call 0 of stream 0) failed")) << o.errors[2];
    o.expect_later_calls_refused_or_right();
}

// Regression: a halo exchange in which rank 1's ghost is longer than its
// neighbour's row: rank 1 threw in the first step's finish(), and its
// neighbours waited in the second step for its rows.
TEST(revoked_stream, a_ghost_that_does_not_fit_its_row_fails_the_next_exchange_of_every_neighbour) {
    std::vector<std::string> errors(3);
    std::atomic<int> steps_done{0};
    csp::run([&] {
        cc::run_local(3, [&](cc::local_communicator& c) {
            const int r = c.rank();
            const auto nbs = cc::cartesian({3}).neighbours(r);  // a line: no_rank at the ends
            std::vector<double> t(10, r), ghost_before(r == 1 ? 3 : 2), ghost_after(2);
            auto halo = cc::make_neighbour_exchange<double>(
                c, nbs, {std::span<const double>(&t[0], 2), std::span<const double>(&t[8], 2)},
                {std::span<double>(ghost_before), std::span<double>(ghost_after)}, cc::stream{3});
            try {
                for (int step = 0; step < 3; ++step) {
                    halo.exchange();
                    ++steps_done;
                }
            } catch (const std::exception& e) {
                errors[static_cast<std::size_t>(r)] = e.what();
            }
        });
    });
    EXPECT_TRUE(names(errors[1], "neighbour_exchange: rank 0 sent 2 elements for a buffer of 3")) << errors[1];
    for (int r : {0, 2})
        EXPECT_TRUE(names(errors[r], "rank 1's neighbour exchange (call 0 of stream 3) failed")) << errors[r];
    EXPECT_LE(steps_done.load(), 2);  // ranks 0 and 2 may finish the first step; nobody a second
}

// Regression: in a two-level call only the failing rank's host heard of
// the failure (rank 3's vector is longer; its host's leader, rank 2, folds
// it): the other host's ranks waited in the leaders' allreduce and in their
// host's hand-out. Every level the failing ranks are in passes it on.
TEST(revoked_stream, a_failure_on_one_host_reaches_every_rank_of_every_host_in_a_hierarchical_call) {
    std::vector<std::string> errors(4);
    std::atomic<int> other_stream_sums{0};
    csp::run([&] {
        cc::run_local(4, [&](cc::local_communicator& c) {
            cc::hierarchy h(c, "host" + std::to_string(c.rank() / 2));
            try {
                (void)cc::hierarchical::allreduce(h, std::vector<double>(c.rank() == 3 ? 5 : 4, 1.0), cc::sum{});
            } catch (const std::exception& e) {
                errors[static_cast<std::size_t>(c.rank())] = e.what();
            }
            other_stream_sums += cc::hierarchical::allreduce(h, 1, cc::sum{}, cc::stream{1});
        });
    });
    EXPECT_TRUE(names(errors[2], "vectors of different lengths (4 and 5)")) << errors[2];
    EXPECT_TRUE(names(errors[3], "rank 2 (rank 0 of a group)'s reduce (call 0 of stream 0) failed")) << errors[3];
    for (int r : {0, 1})
        EXPECT_TRUE(names(errors[r], "rank 2's hierarchical allreduce (stream 0) failed: reduction over vectors of "
                                     "different lengths (4 and 5)"))
            << errors[r];
    EXPECT_EQ(other_stream_sums.load(), 16);
}

// Runs each of `calls` at 4 ranks, every one of which must throw a
// usage_error naming `what`, each followed by a ring allgather on the same
// stream, which must give every rank all 4 values: nothing was revoked.
template <class... Call>
void expect_agreed_errors(const std::string& what, Call... calls) {
    std::atomic<int> sizes{0}, errors{0};
    csp::run([&] {
        cc::run_local(4, [&](cc::local_communicator& c) {
            const auto one = [&](auto call) {
                try {
                    call(c);
                } catch (const csp::usage_error& e) {
                    EXPECT_TRUE(names(e.what(), what)) << e.what();
                    ++errors;
                }
                sizes += static_cast<int>(cc::allgather_ring(c, 1).size());
            };
            (one(calls), ...);
        });
    });
    EXPECT_EQ(errors.load(), 4 * int(sizeof...(Call)));
    EXPECT_EQ(sizes.load(), 16 * int(sizeof...(Call)));
}

// An error every rank finds alike after they met (a put_get name outside
// the group, seen by every rank in the gathered requests) needs no
// revocation: the stream goes on.
TEST(revoked_stream, an_error_every_rank_finds_alike_after_the_call_leaves_the_stream_usable) {
    expect_agreed_errors("put_get: rank 1 asked for the value of rank -3", [](cc::local_communicator& c) {
        (void)cc::put_get(c, c.rank(), c.rank() == 1 ? -3 : 0);
    });
}

// Values of different types in one meeting of the shared board: every rank
// reads every slot and throws alike, so nothing is revoked (with the
// algorithm called by its name guarded, this once revoked the stream, and
// the host board's test of the same, which goes on in its stream, failed).
TEST(revoked_stream, a_board_meeting_of_different_types_fails_every_rank_and_leaves_the_stream_usable) {
    expect_agreed_errors(
        "a collective received a value of type",
        [](cc::local_communicator& c) {
            if (c.rank() == 2) (void)cc::allreduce_shared_memory(c, 2L, cc::sum{});
            else (void)cc::allreduce_shared_memory(c, 1, cc::sum{});
        },
        [](cc::local_communicator& c) {
            if (c.rank() == 2) (void)cc::allreduce(c, 2L, cc::sum{});
            else (void)cc::allreduce(c, 1, cc::sum{});
        });
}

// Regression: ranks naming different roots on the shared board returned a
// value nobody had passed (rank 0 read the slot of a rank that did not
// write it). The board now compares the ranks' roots: every rank throws
// alike, and the stream goes on.
TEST(revoked_stream, a_board_meeting_whose_ranks_name_different_roots_fails_every_rank_and_leaves_the_stream_usable) {
    expect_agreed_errors(
        "broadcast: the ranks name different roots (rank 0 names 1, rank 1 names 0): every rank must name the same "
        "root",
        [](cc::local_communicator& c) { (void)cc::broadcast_shared_memory(c, 1.0 + c.rank(), c.rank() == 0 ? 1 : 0); },
        [](cc::local_communicator& c) { (void)cc::broadcast(c, 1.0 + c.rank(), c.rank() == 0 ? 1 : 0); });
    expect_agreed_errors("reduce: the ranks name different roots (rank 0 names 0, rank 2 names 2)",
                         [](cc::local_communicator& c) {
                             (void)cc::reduce_shared_memory(c, c.rank(), cc::sum{}, c.rank() < 2 ? 0 : 2);
                         });
}

// The sibling: ranks passing different ops to one meeting each folded the
// same slots with its own op, and returned different answers.
TEST(revoked_stream, a_board_meeting_whose_ranks_pass_different_ops_fails_every_rank_and_leaves_the_stream_usable) {
    const std::string what =
        "the ranks pass ops of different types (rank 0's and rank 2's): every rank must pass the same op";
    expect_agreed_errors("allreduce: " + what, [](cc::local_communicator& c) {
        if (c.rank() == 2) (void)cc::allreduce_shared_memory(c, c.rank(), cc::maximum{});
        else (void)cc::allreduce_shared_memory(c, c.rank(), cc::sum{});
    });
    expect_agreed_errors("reduce: " + what, [](cc::local_communicator& c) {
        if (c.rank() == 2) (void)cc::reduce_shared_memory(c, c.rank(), cc::maximum{}, 0);
        else (void)cc::reduce_shared_memory(c, c.rank(), cc::sum{}, 0);
    });
}

}  // namespace

// Regression: ranks that pass different counts adding up to the same length
// (rank 1 asks for blocks {1, 3, 2, 2}, the others {2, 2, 2, 2}). The root
// of reduce_then_scatter cut the fold by its own counts, and rank 1 got a
// block of 2 elements where it had asked for 3, with no error. Now no rank
// returns a block of another length than it asked for: the ring fails the
// call at every rank (each block passes every rank, which checks its
// length), reduce_then_scatter at the ranks whose block the root cut
// otherwise (the others' blocks are right by their counts); either way the
// stream is revoked.
TEST(revoked_stream, counts_that_differ_between_ranks_never_give_a_block_of_another_length) {
    cc::registry::reduce_scatter::for_each([&](auto a) {
        SCOPED_TRACE(a.info.name);
        outcome o;
        std::atomic<int> right_blocks{0};
        run_with(o, [&](cc::local_communicator& c) {
            const std::vector<std::size_t> counts =
                c.rank() == 1 ? std::vector<std::size_t>{1, 3, 2, 2} : std::vector<std::size_t>{2, 2, 2, 2};
            // As a user calls it by its own name (the registry lists the
            // unguarded algorithms).
            const cc::guarded_algorithm<decltype(a)> by_name;
            const auto got = by_name(c, std::vector<double>(8, 1.0), counts, cc::sum{});
            if (got == std::vector<double>(counts[static_cast<std::size_t>(c.rank())], 4.0)) ++right_blocks;
        });
        EXPECT_EQ(right_blocks.load(), o.answers.load());
        EXPECT_TRUE(names(o.errors[1], "reduce_scatter: rank ") && names(o.errors[1], " elements, not ") &&
                    names(o.errors[1], "do all ranks pass the same counts?"))
            << o.errors[1];
        for (int r = 0; r < 4; ++r) {
            if (!o.errors[r].empty()) {
                EXPECT_TRUE(names(o.errors[r], "do all ranks pass the same counts?")) << o.errors[r];
            }
        }
        if (std::string_view(a.info.name) == "ring") {
            EXPECT_EQ(o.answers.load(), 0);
        }
        o.expect_later_calls_refused_or_right();
    });
}

// Vectors of different lengths (rank 1's is one element short), for every
// algorithm of the collectives that fold them element-wise: no rank may
// return a result that is not the full fold of 4 vectors of its own length.
template <class Registry, class Call, class Check>
void expect_no_wrong_fold_of_unequal_vectors(Call call, Check right) {
    Registry::for_each([&](auto a) {
        SCOPED_TRACE(a.info.name);
        outcome o;
        std::atomic<int> wrong{0};
        run_with(o, [&](cc::local_communicator& c) {
            const cc::guarded_algorithm<decltype(a)> by_name;
            const std::size_t length = c.rank() == 1 ? 7 : 8;
            if (!right(c, call(by_name, c, std::vector<long>(length, 1)), length)) ++wrong;
        });
        EXPECT_EQ(wrong.load(), 0);
        EXPECT_GE(4 - o.answers.load(), 1) << "no rank saw the lengths differ";
    });
}

TEST(revoked_stream, vectors_of_different_lengths_never_give_a_wrong_allreduce) {
    expect_no_wrong_fold_of_unequal_vectors<cc::registry::allreduce>(
        [](auto& by_name, auto& c, std::vector<long> v) { return by_name(c, std::move(v), cc::sum{}); },
        [](auto&, const std::vector<long>& got, std::size_t length) { return got == std::vector<long>(length, 4); });
}
TEST(revoked_stream, vectors_of_different_lengths_never_give_a_wrong_reduce) {
    expect_no_wrong_fold_of_unequal_vectors<cc::registry::reduce>(
        [](auto& by_name, auto& c, std::vector<long> v) { return by_name(c, std::move(v), cc::sum{}, 0); },
        [](auto&, const std::optional<std::vector<long>>& got, std::size_t length) {
            return !got || *got == std::vector<long>(length, 4);
        });
}
TEST(revoked_stream, vectors_of_different_lengths_never_give_a_wrong_scan) {
    expect_no_wrong_fold_of_unequal_vectors<cc::registry::scan>(
        [](auto& by_name, auto& c, std::vector<long> v) { return by_name(c, std::move(v), cc::sum{}); },
        [](auto& c, const std::vector<long>& got, std::size_t length) {
            return got == std::vector<long>(length, c.rank() + 1);
        });
}
