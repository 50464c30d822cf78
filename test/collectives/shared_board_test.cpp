// The shared-memory algorithms (collectives/shared_board.hpp): values and
// rank order, failures, wrong types, other collectives between meetings,
// concurrent streams, and many meetings on several workers, every result
// checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/collectives.hpp"
#include "csp/model/recorder.hpp"
#include "csp/runtime.hpp"

namespace cc = csp::collectives;

namespace {

class shared_board : public ::testing::TestWithParam<std::size_t> {
protected:
    csp::runtime_options on_workers() const { return {.threads = GetParam()}; }
};

// Runs body at each of n ranks and expects a usage_error naming `what` at
// every one of them.
template <class Body>
void expect_usage_error_at_every_rank(int n, csp::runtime_options on, const std::string& what, Body body) {
    std::atomic<int> errors{0};
    EXPECT_THROW(csp::run([&] {
        cc::run_local(n, [&](cc::local_communicator& c) {
            try {
                body(c);
            } catch (const csp::usage_error& e) {
                EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
                errors.fetch_add(1);
                throw;
            }
        });
    }, on), csp::usage_error);
    EXPECT_EQ(errors.load(), n);
}

INSTANTIATE_TEST_SUITE_P(, shared_board, ::testing::Values(std::size_t{1}, std::size_t{2}, std::size_t{4}),
                         [](const auto& info) { return std::to_string(info.param) + "_threads"; });

}  // namespace

TEST_P(shared_board, an_op_that_does_not_commute_gets_rank_order_at_every_rank) {
    const auto cat = cc::ordered([](const std::string& a, const std::string& b) { return a + b; });
    std::vector<std::string> got(7);
    csp::run([&] {
        cc::run_local(7, [&](cc::local_communicator& c) {
            got[static_cast<std::size_t>(c.rank())] = cc::allreduce_shared_memory(c, std::to_string(c.rank()), cat);
            auto r = cc::reduce_shared_memory(c, std::to_string(c.rank()), cat, 3);
            EXPECT_EQ(r.has_value(), c.rank() == 3);
            if (r) {
                EXPECT_EQ(*r, "0123456");
            }
            EXPECT_EQ(cc::broadcast_shared_memory(c, c.rank() == 5 ? std::string("five") : std::string(), 5), "five");
            cc::barrier_shared_memory(c);
        });
    }, on_workers());
    for (const auto& g : got) EXPECT_EQ(g, "0123456");
}

// Regression (message_collectives_between_meetings_never_overwrite_a_slot_being_read):
// the first board chose its slot set by the call's tag sequence. A rank that
// ran through a message-passing collective of the same stream reached the
// next meeting two sequence numbers on, and overwrote the set a slower rank
// was still reading (a wrong type or value, seen in the shared grid). Sets
// now alternate per meeting.
TEST_P(shared_board, message_collectives_between_meetings_never_overwrite_a_slot_being_read) {
    constexpr int n = 6, rounds = 300;
    std::atomic<int> checked{0};
    csp::run([&] {
        cc::run_local(n, [&](cc::local_communicator& c) {
            const long me = c.rank();
            for (int k = 0; k < rounds; ++k) {
                const long total = cc::allreduce_shared_memory(c, me * k + 1, cc::sum{});
                EXPECT_EQ(total, k * (n * (n - 1) / 2) + n) << "round " << k;
                // The root only sends: it leaves at once for the next meeting.
                EXPECT_EQ(cc::broadcast_flat(c, k * 10L, k % n), k * 10L);
                const auto v = cc::allreduce_shared_memory(c, std::vector<long>{me, k}, cc::maximum{});
                EXPECT_EQ(v, (std::vector<long>{n - 1, k}));
                checked.fetch_add(1, std::memory_order_relaxed);
            }
        });
    }, on_workers());
    EXPECT_EQ(checked.load(), n * rounds);
}

TEST_P(shared_board, thousands_of_meetings_on_concurrent_streams_each_get_their_own_sum) {
    constexpr int n = 8, rounds = 1000;
    std::atomic<long> sums{0};
    csp::run([&] {
        cc::run_local(n, [&](cc::local_communicator& c) {
            csp::par(
                [&] {
                    for (int k = 0; k < rounds; ++k) {
                        const long s = cc::allreduce_shared_memory(c, long{c.rank()} + k, cc::sum{}, cc::stream{1});
                        EXPECT_EQ(s, 28L + n * k);
                        sums.fetch_add(1, std::memory_order_relaxed);
                    }
                },
                [&] {
                    for (int k = 0; k < rounds; ++k) {
                        const double p = cc::allreduce_shared_memory(c, 2.0, cc::product{}, cc::stream{2});
                        EXPECT_EQ(p, 256.0);
                        sums.fetch_add(1, std::memory_order_relaxed);
                    }
                });
        });
    }, on_workers());
    EXPECT_EQ(sums.load(), 2L * n * rounds);
}

TEST_P(shared_board, a_rank_that_fails_fails_every_other_ranks_meeting) {
    for (int failing_round : {0, 3}) {
        std::atomic<int> saw_error{0};
        EXPECT_THROW(csp::run([&] {
            cc::run_local(5, [&](cc::local_communicator& c) {
                for (int k = 0; k < 10; ++k) {
                    if (c.rank() == 2 && k == failing_round) throw std::runtime_error("rank 2 gave up");
                    try {
                        cc::allreduce_shared_memory(c, 1, cc::sum{});
                    } catch (const std::runtime_error& e) {
                        EXPECT_STREQ(e.what(), "rank 2 gave up");
                        saw_error.fetch_add(1);
                        throw;
                    }
                }
            });
        }, on_workers()), std::runtime_error);
        EXPECT_EQ(saw_error.load(), 4) << "failing in round " << failing_round;
    }
}

TEST_P(shared_board, ranks_that_pass_different_types_all_get_a_usage_error) {
    expect_usage_error_at_every_rank(4, on_workers(), "float", [](cc::local_communicator& c) {
        if (c.rank() == 1) cc::allreduce_shared_memory(c, 1.0f, cc::sum{});
        else cc::allreduce_shared_memory(c, 1.0, cc::sum{});
    });
}

TEST(shared_board_fallback, under_a_model_recorder_and_in_a_sub_group_the_ranks_pass_messages) {
    // A recorder sees messages only, so the board gives way to the fallback
    // and the model shows it; a sub-group's ranks are not the board's.
    cc::trace_log log;
    {
        csp::model::recorder rec;  // installed while it lives
        csp::run([&] {
            cc::run_local(4, [&](cc::local_communicator& c) {
                cc::traced t(c, log);
                EXPECT_EQ(cc::allreduce(t, 1, cc::sum{}), 4);
                EXPECT_EQ(cc::allreduce_shared_memory(t, 1, cc::sum{}), 4);
            });
        });
        EXPECT_FALSE(rec.take().processes.empty());
    }
    // The table's choice for ranks that pass messages, then the fallback.
    const auto ran = log.algorithms();
    EXPECT_EQ(std::count(ran.begin(), ran.end(), "allreduce butterfly"), 4);
    EXPECT_EQ(std::count(ran.begin(), ran.end(), "allreduce reduce_broadcast"), 4);
    EXPECT_EQ(std::count(ran.begin(), ran.end(), "allreduce shared_memory"), 0);
    log.clear();
    csp::run([&] {
        cc::run_local(4, [&](cc::local_communicator& c) {
            cc::traced t(c, log);
            EXPECT_EQ(cc::allreduce(t, 1, cc::sum{}), 4);
            auto half = cc::split(c, c.rank() % 2, c.rank());
            ASSERT_TRUE(half.has_value());
            EXPECT_EQ(cc::allreduce_shared_memory(*half, c.rank(), cc::sum{}), c.rank() % 2 == 0 ? 2 : 4);
        });
    });
    EXPECT_EQ(log.algorithms().front(), "allreduce shared_memory");
}

TEST_P(shared_board, large_vectors_are_folded_by_blocks_and_match_the_sequential_fold) {
    // 5 ranks and a length that 5 does not divide: blocks of unequal size.
    const std::size_t length = cc::allreduce_shared_memory_fn::shared_blocks_from + 3;
    auto part = [&](int r, int k) {
        std::vector<double> v(length);
        for (std::size_t i = 0; i < length; ++i) v[i] = static_cast<double>((i * 7 + r * 13 + k) % 101) - 50.0;
        return v;
    };
    std::atomic<int> checked{0};
    csp::run([&] {
        cc::run_local(5, [&](cc::local_communicator& c) {
            for (int k = 0; k < 20; ++k) {
                std::vector<double> sum = part(0, k), low = part(0, k);
                for (int r = 1; r < 5; ++r) {
                    const auto p = part(r, k);
                    for (std::size_t i = 0; i < length; ++i) sum[i] += p[i], low[i] = std::min(low[i], p[i]);
                }
                EXPECT_EQ(cc::allreduce_shared_memory(c, part(c.rank(), k), cc::sum{}), sum);
                EXPECT_EQ(cc::allreduce_shared_memory(c, part(c.rank(), k), cc::minimum{}), low);
                checked.fetch_add(1);
            }
        });
    }, on_workers());
    EXPECT_EQ(checked.load(), 100);
}

TEST_P(shared_board, large_vectors_of_different_lengths_are_a_usage_error_at_every_rank) {
    const std::size_t length = cc::allreduce_shared_memory_fn::shared_blocks_from;
    expect_usage_error_at_every_rank(3, on_workers(), "different lengths", [&](cc::local_communicator& c) {
        cc::allreduce_shared_memory(c, std::vector<int>(length + (c.rank() == 2 ? 1 : 0), 1), cc::sum{});
    });
}
