// A collective call that fails at one rank fails at every rank
// (collectives/revocation.hpp), for ranks as fibers of one runtime; the
// same over TCP is net_test.cpp's net_bad_input.
#include <gtest/gtest.h>

#include <atomic>
#include <optional>
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
    for (int r = 0; r < 4; ++r) EXPECT_TRUE(names(o.errors[r], "vectors of different lengths (8 and 12)")) << o.errors[r];
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

// An error every rank finds alike needs no revocation: the stream goes on.
TEST(revoked_stream, errors_every_rank_finds_alike_leave_the_stream_usable) {
    std::atomic<int> sums{0}, errors{0};
    csp::run([&] {
        cc::run_local(4, [&](cc::local_communicator& c) {
            try {
                (void)cc::broadcast(c, 1, 4);
            } catch (const csp::usage_error&) {
                ++errors;
            }
            try {
                (void)cc::put_get(c, c.rank(), c.rank() == 1 ? -3 : 0);
            } catch (const csp::usage_error&) {
                ++errors;
            }
            sums += cc::allgather_ring(c, 1).size();
        });
    });
    EXPECT_EQ(errors.load(), 8);
    EXPECT_EQ(sums.load(), 16);
}

}  // namespace
