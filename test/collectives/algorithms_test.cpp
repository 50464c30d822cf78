// Every algorithm, called by name, over local channels, against a
// sequential reference: sizes 1..16, every root, payloads of 0, 1 and many
// elements, sum/min/max and ops that do not commute.
#include <gtest/gtest.h>

#include <bit>
#include <concepts>
#include <atomic>
#include <random>
#include <numeric>
#include <cmath>
#include <cstring>
#include <memory_resource>

#include "collectives/collectives.hpp"
#include "csp/runtime.hpp"
#include "grid.hpp"

namespace cc = csp::collectives;
using grid::fold;

namespace {

class sizes : public ::testing::TestWithParam<int> {};

// Runs check(comm) at every rank of an n-rank local group, for each root.
template <class F>
void for_each_root(int n, F check) {
    for (int root = 0; root < n; ++root)
        csp::run([&] { cc::run_local(n, [&](cc::local_communicator& c) { check(c, root); }); });
}

template <class Op, class F>
void expect_reduce(cc::local_communicator& c, int root, const Op& op, F value_of, bool may_reorder) {
    const auto want = fold(0, c.size(), value_of, op);
    constexpr bool vectors = cc::detail::is_vector<decltype(value_of(0))>::value;
    for (const auto& info : cc::registry::reduce::infos) {
        if (info.needs_commuting_op && !may_reorder) continue;
        if (info.needs_elementwise && !(vectors && cc::acts_elementwise(op))) continue;
        const auto a = info.name;
        auto got = grid::reduce_by(a, c, value_of(c.rank()), op, root);
        if (c.rank() == root) {
            ASSERT_TRUE(got.has_value()) << a;
            EXPECT_EQ(*got, *want) << a << " size " << c.size() << " root " << root;
        } else {
            EXPECT_FALSE(got.has_value()) << a << " gave a value to a non-root";
        }
    }
}

}  // namespace

TEST_P(sizes, broadcast_every_root_and_payload) {
    const int n = GetParam();
    for_each_root(n, [&](cc::local_communicator& c, int root) {
        for (std::size_t len : {0u, 1u, 33u}) {
            const auto want = grid::numbers_of(root, len);
            auto mine = c.rank() == root ? want : std::vector<std::int64_t>{};
            cc::registry::broadcast::for_each([&](auto a) { EXPECT_EQ(a(c, mine, root), want) << grid::name_of(a); });
        }
    });
}

// broadcast_into: every rank's buffer gets the root's elements (the local
// group's table takes the shared board); a buffer of another length than
// the root's is refused at that rank, naming both lengths.
TEST_P(sizes, broadcast_into_fills_every_buffer_from_every_root) {
    const int n = GetParam();
    for_each_root(n, [&](cc::local_communicator& c, int root) {
        for (std::size_t len : {0u, 1u, 33u, 5000u}) {
            const auto want = grid::numbers_of(root, len);
            std::vector<std::int64_t> buffer = c.rank() == root ? want : std::vector<std::int64_t>(len, -1);
            cc::broadcast_into(c, std::span(buffer), root);
            EXPECT_EQ(buffer, want) << "length " << len;
        }
    });
    if (n == 1) return;
    csp::run([&] {
        cc::run_local(n, [&](cc::local_communicator& c) {
            std::vector<double> buffer(c.rank() == n - 1 ? 4 : 3, 1.0);
            try {
                cc::broadcast_into(c, std::span(buffer), 0);
                EXPECT_NE(c.rank(), n - 1) << "a buffer of 4 took the root's 3";
            } catch (const csp::usage_error& e) {
                EXPECT_EQ(c.rank(), n - 1);
                EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(n - 1) +
                                                     "'s buffer holds 4 elements, the root's 3"),
                          std::string::npos)
                    << e.what();
            }
        });
    });
}

TEST_P(sizes, reduce_every_algorithm_root_payload_and_op) {
    const int n = GetParam();
    for_each_root(n, [&](cc::local_communicator& c, int root) {
        for (std::size_t len : {0u, 1u, 17u}) {
            auto numbers = [len](int r) { return grid::numbers_of(r, len); };
            expect_reduce(c, root, cc::sum{}, numbers, true);
            expect_reduce(c, root, cc::minimum{}, numbers, true);
            expect_reduce(c, root, cc::maximum{}, numbers, true);
            expect_reduce(c, root, grid::concat, [len](int r) { return grid::text_of(r, len); }, false);
        }
        expect_reduce(c, root, grid::mat_product, grid::mat_of, false);
    });
}

TEST_P(sizes, reduce_of_an_op_that_does_not_commute_keeps_rank_order_for_any_root) {
    const int n = GetParam();
    for_each_root(n, [&](cc::local_communicator& c, int root) {
        // "abc...": any reordering would show.
        auto letter = [](int r) { return std::string(1, static_cast<char>('a' + r)); };
        std::string want;
        for (int r = 0; r < n; ++r) want += letter(r);
        cc::registry::reduce::for_each([&](auto a) {
            if (a.info.needs_commuting_op || a.info.needs_elementwise) return;
            auto got = a(c, letter(c.rank()), grid::concat, root);
            if (c.rank() == root) { EXPECT_EQ(got.value(), want) << grid::name_of(a); }
        });
    });
}

TEST_P(sizes, gather_and_scatter_every_root) {
    const int n = GetParam();
    for_each_root(n, [&](cc::local_communicator& c, int root) {
        std::vector<std::string> all;
        for (int r = 0; r < n; ++r) all.push_back(grid::text_of(r, static_cast<std::size_t>(r % 3)));
        cc::registry::gather::for_each([&](auto g) {
            auto got = g(c, all[static_cast<std::size_t>(c.rank())], root);
            if (c.rank() == root) EXPECT_EQ(got.value(), all) << grid::name_of(g);
            else EXPECT_FALSE(got.has_value()) << grid::name_of(g);
        });
        auto input = c.rank() == root ? all : std::vector<std::string>{};
        cc::registry::scatter::for_each([&](auto a) {
            EXPECT_EQ(a(c, input, root), all[static_cast<std::size_t>(c.rank())]) << grid::name_of(a);
        });
    });
}

TEST_P(sizes, allreduce_both_algorithms_every_payload_and_op) {
    const int n = GetParam();
    csp::run([&] {
        cc::run_local(n, [&](cc::local_communicator& c) {
            for (std::size_t len : {0u, 1u, 17u}) {
                auto numbers = [len](int r) { return grid::numbers_of(r, len); };
                auto text = [len](int r) { return grid::text_of(r, len); };
                const auto sum = *fold(0, n, numbers, cc::sum{});
                const auto mx = *fold(0, n, numbers, cc::maximum{});
                const auto cat = *fold(0, n, text, grid::concat);
                EXPECT_EQ(cc::allreduce_butterfly(c, numbers(c.rank()), cc::sum{}), sum);
                EXPECT_EQ(cc::allreduce_reduce_broadcast(c, numbers(c.rank()), cc::sum{}), sum);
                EXPECT_EQ(cc::allreduce_butterfly(c, numbers(c.rank()), cc::maximum{}), mx);
                EXPECT_EQ(cc::allreduce_butterfly(c, text(c.rank()), grid::concat), cat);
                EXPECT_EQ(cc::allreduce_reduce_broadcast(c, text(c.rank()), grid::concat), cat);
            }
            const auto m = *fold(0, n, grid::mat_of, grid::mat_product);
            EXPECT_EQ(cc::allreduce_butterfly(c, grid::mat_of(c.rank()), grid::mat_product), m);
        });
    });
}

TEST_P(sizes, barriers_hold_every_rank_until_all_have_entered) {
    const int n = GetParam();
    csp::run([&] {
        std::atomic<int> entered{0};
        cc::run_local(n, [&](cc::local_communicator& c) {
            cc::registry::barrier::for_each([&](auto b) {
                for (int round = 0; round < 3; ++round) {
                    entered.fetch_add(1);
                    b(c);
                    // Nobody leaves round k before all n entered it; nobody
                    // enters round k+1 before this rank has checked.
                    EXPECT_GE(entered.load(), n * (round + 1)) << grid::name_of(b) << " rank " << c.rank();
                    b(c);
                }
                b(c);
                if (c.rank() == 0) entered.store(0);
                b(c);
            });
        });
    });
}

TEST_P(sizes, allgather_alltoall_and_scans) {
    const int n = GetParam();
    csp::run([&] {
        cc::run_local(n, [&](cc::local_communicator& c) {
            const int me = c.rank();
            std::vector<std::string> everyone;
            for (int r = 0; r < n; ++r) everyone.push_back(grid::text_of(r, 2));
            EXPECT_EQ(cc::allgather_gather_broadcast(c, grid::text_of(me, 2)), everyone);

            std::vector<int> out, want;
            for (int j = 0; j < n; ++j) out.push_back(me * 100 + j), want.push_back(j * 100 + me);
            EXPECT_EQ(cc::alltoall_parallel(c, out), want);

            auto letter = [](int r) { return std::string(1, static_cast<char>('a' + r)); };
            const auto inclusive = *fold(0, me + 1, letter, grid::concat);
            const auto exclusive = fold(0, me, letter, grid::concat);
            cc::registry::scan::for_each(
                [&](auto a) { EXPECT_EQ(a(c, letter(me), grid::concat), inclusive) << grid::name_of(a); });
            cc::registry::exscan::for_each(
                [&](auto a) { EXPECT_EQ(a(c, letter(me), grid::concat), exclusive) << grid::name_of(a); });
            EXPECT_EQ(cc::scan_recursive_doubling(c, grid::numbers_of(me, 5), cc::sum{}),
                      *fold(0, me + 1, [](int r) { return grid::numbers_of(r, 5); }, cc::sum{}));
        });
    });
}

TEST_P(sizes, reduce_scatter_put_get_and_sendrecv) {
    const int n = GetParam();
    csp::run([&] {
        cc::run_local(n, [&](cc::local_communicator& c) {
            const int me = c.rank();
            // Equal blocks of 3, and irregular ones with empty blocks.
            auto longs = [n](int r) { return grid::numbers_of(r, 3 * static_cast<std::size_t>(n)); };
            const auto equal = std::vector<std::size_t>(static_cast<std::size_t>(n), 3);
            const auto whole = *fold(0, n, longs, cc::sum{});
            EXPECT_EQ(cc::reduce_scatter_block(c, longs(me), cc::sum{}), grid::block(whole, equal, me));
            const auto counts = grid::counts_for(n);
            auto bits = [&](int r) { return grid::bits_of(r, grid::total(counts)); };
            cc::registry::reduce_scatter::for_each([&](auto a) {
                EXPECT_EQ(a(c, longs(me), equal, cc::sum{}), grid::block(whole, equal, me)) << grid::name_of(a);
                EXPECT_EQ(a(c, bits(me), counts, cc::bit_or{}),
                          grid::block(*fold(0, n, bits, cc::bit_or{}), counts, me))
                    << grid::name_of(a);
            });

            // A random mapping (the same at every rank), then a permutation.
            std::mt19937 rng(static_cast<unsigned>(n));
            std::vector<int> from(static_cast<std::size_t>(n));
            for (auto& f : from) f = static_cast<int>(rng() % static_cast<unsigned>(n));
            std::vector<int> perm(static_cast<std::size_t>(n));
            std::iota(perm.begin(), perm.end(), 0);
            std::shuffle(perm.begin(), perm.end(), rng);
            const auto mine = static_cast<std::size_t>(me);
            cc::registry::put_get::for_each([&](auto a) {
                EXPECT_EQ(a(c, grid::text_of(me, 4), from[mine]), grid::text_of(from[mine], 4)) << grid::name_of(a);
                EXPECT_EQ(a(c, me * 10, perm[mine]), perm[mine] * 10) << grid::name_of(a);
            });
            EXPECT_EQ(cc::put_get(c, me, n - 1 - me), n - 1 - me);
            EXPECT_EQ(cc::sendrecv(c, std::string(1, char('a' + me)), (me + 2) % n, (me + n - 2) % n),
                      std::string(1, char('a' + (me + n - 2) % n)));
        });
    });
}

TEST_P(sizes, pipelined_broadcast_of_several_segments_from_every_root) {
    const int n = GetParam();
    // 2.5 segments of 8-byte elements, a vector shorter than one, and none.
    const std::size_t per = cc::broadcast_pipeline_fn::segment_bytes / sizeof(std::int64_t);
    for_each_root(n, [&](cc::local_communicator& c, int root) {
        for (std::size_t len : {per * 5 / 2, std::size_t{3}, std::size_t{0}}) {
            const auto want = grid::numbers_of(root + 1, len);
            EXPECT_EQ(cc::broadcast_pipeline(c, c.rank() == root ? want : std::vector<std::int64_t>{}, root), want)
                << "root " << root << " length " << len;
        }
        EXPECT_THROW(cc::broadcast_pipeline(c, 5, root), csp::usage_error);
    });
}

TEST_P(sizes, pipelined_reduce_folds_every_segment_in_rank_order_for_every_root) {
    const int n = GetParam();
    const std::size_t per = cc::reduce_pipeline_fn::segment_bytes / sizeof(std::int64_t);
    const std::size_t mats_per = cc::reduce_pipeline_fn::segment_bytes / sizeof(grid::mat2);
    for_each_root(n, [&](cc::local_communicator& c, int root) {
        const int me = c.rank();
        for (std::size_t len : {per * 5 / 2, per, std::size_t{3}, std::size_t{0}}) {
            auto numbers = [len](int r) { return grid::numbers_of(r, len); };
            auto got = cc::reduce_pipeline(c, numbers(me), cc::sum{}, root);
            EXPECT_EQ(got.has_value(), me == root) << "root " << root << " length " << len;
            if (got) {
                EXPECT_EQ(*got, *fold(0, n, numbers, cc::sum{})) << "root " << root << " length " << len;
            }
        }
        const std::size_t len = mats_per * 2 + 3;
        auto mats = [len](int r) { return grid::mats_of(r, len); };
        auto got = cc::reduce_pipeline(c, mats(me), grid::mats_in_order{}, root);
        if (got) {
            EXPECT_EQ(*got, *fold(0, n, mats, grid::mats_in_order{})) << "matrices in rank order, root " << root;
        }
        EXPECT_THROW(cc::reduce_pipeline(c, 5, cc::sum{}, root), csp::usage_error);
        EXPECT_THROW(cc::reduce_pipeline(c, grid::mats_of(me, 2), grid::mats_product, root), csp::usage_error);
    });
}

TEST(reduce_pipeline, vectors_of_different_lengths_fail_naming_both) {
    std::string what;
    try {
        csp::run([] {
            cc::run_local(3, [](cc::local_communicator& c) {
                (void)cc::reduce_pipeline(c, grid::numbers_of(c.rank(), c.rank() == 2 ? 20000 : 10), cc::sum{}, 0);
            });
        });
    } catch (const csp::usage_error& e) {
        what = e.what();
    }
    EXPECT_NE(what.find("rank 2 reduces a vector of 20000 elements, rank 1 one of 10"), std::string::npos) << what;
}

TEST_P(sizes, ring_allreduce_and_allgather_with_uneven_and_empty_blocks) {
    const int n = GetParam();
    csp::run([&] {
        cc::run_local(n, [&](cc::local_communicator& c) {
            const int me = c.rank();
            for (std::size_t len : {std::size_t{0}, std::size_t{1}, static_cast<std::size_t>(n) - 1,
                                    3 * static_cast<std::size_t>(n) + 2}) {
                auto numbers = [len](int r) { return grid::numbers_of(r, len); };
                EXPECT_EQ(cc::allreduce_ring(c, numbers(me), cc::sum{}), *fold(0, n, numbers, cc::sum{})) << len;
                EXPECT_EQ(cc::allreduce_ring(c, numbers(me), cc::minimum{}), *fold(0, n, numbers, cc::minimum{}))
                    << len;
            }
            std::vector<std::vector<std::int64_t>> everyone;
            for (int r = 0; r < n; ++r) everyone.push_back(grid::numbers_of(r, static_cast<std::size_t>(r)));
            EXPECT_EQ(cc::allgather_ring(c, grid::numbers_of(me, static_cast<std::size_t>(me))), everyone);
            EXPECT_THROW(cc::allreduce_ring(c, 1, cc::sum{}), csp::usage_error);
            // A user's op on whole vectors may not act element by element.
            auto whole = cc::commuting([](const std::vector<int>& a, const std::vector<int>&) { return a; });
            EXPECT_THROW(cc::allreduce_ring(c, std::vector<int>{1}, whole), csp::usage_error);
        });
    }, {.threads = static_cast<std::size_t>(1 + n % 2)});
}

INSTANTIATE_TEST_SUITE_P(one_to_sixteen, sizes, ::testing::Range(1, 17));

// Regression: the ring allgather and the pipelined broadcast relayed any
// vector of plain elements as a std::vector's, so a std::pmr::vector (sent
// as its own type) was refused on receipt as the wrong type. They now pass
// such a vector on as itself.
TEST(relay, a_vector_of_another_allocator_is_passed_on_as_itself) {
    csp::run([] {
        cc::run_local(4, [](cc::local_communicator& c) {
            const auto of = [](int r) { return std::pmr::vector<double>{r + 0.5, r * 2.0}; };
            std::vector<std::pmr::vector<double>> everyone;
            for (int r = 0; r < c.size(); ++r) everyone.push_back(of(r));
            EXPECT_EQ(cc::allgather_ring(c, of(c.rank())), everyone);
            EXPECT_EQ(cc::broadcast_pipeline(c, c.rank() == 2 ? of(2) : std::pmr::vector<double>{}, 2), of(2));
        });
    });
}

// Bitwise ops take integers, logical ones integers and bools; nothing else
// compiles.
static_assert(std::invocable<cc::bit_xor, int, int> && std::invocable<cc::bit_and, std::vector<std::uint8_t>,
                                                                       std::vector<std::uint8_t>>);
static_assert(!std::invocable<cc::bit_or, double, double> && !std::invocable<cc::bit_and, std::vector<float>,
                                                                             std::vector<float>>);
static_assert(std::invocable<cc::logical_or, bool, bool> && !std::invocable<cc::logical_and, std::string, std::string>);

TEST(stapers_operations, bitwise_and_logical_ops_fold_elementwise) {
    EXPECT_EQ(cc::bit_and{}(0b1100, 0b1010), 0b1000);
    EXPECT_EQ(cc::bit_or{}(0b1100, 0b1010), 0b1110);
    EXPECT_EQ(cc::bit_xor{}(std::vector<int>{1, 2, 3}, std::vector<int>{3, 2, 1}), (std::vector<int>{2, 0, 2}));
    EXPECT_EQ(cc::logical_and{}(5, 3), 1);
    EXPECT_EQ(cc::logical_or{}(std::vector<int>{0, 0, 9}, std::vector<int>{0, 4, 0}), (std::vector<int>{0, 1, 1}));
    EXPECT_THROW(cc::bit_or{}(std::vector<int>{1}, std::vector<int>{1, 2}), csp::usage_error);
}

TEST(stapers_operations, bad_counts_and_requests_are_named_on_every_rank) {
    std::atomic<int> counts_refused{0}, requests_refused{0};
    csp::run([&] {
        cc::run_local(4, [&](cc::local_communicator& c) {
            try {
                cc::reduce_scatter(c, std::vector<int>(7, 1), {2, 2, 2}, cc::sum{});
            } catch (const csp::usage_error& e) {
                EXPECT_NE(std::string(e.what()).find("3 block counts for 4 ranks"), std::string::npos) << e.what();
                ++counts_refused;
            }
            try {
                cc::reduce_scatter(c, std::vector<int>(7, 1), {2, 2, 2, 2}, cc::sum{});
            } catch (const csp::usage_error& e) {
                EXPECT_NE(std::string(e.what()).find("add up to 8 elements, the vector holds 7"), std::string::npos)
                    << e.what();
                ++counts_refused;
            }
            try {
                cc::reduce_scatter_block(c, std::vector<int>(6, 1), cc::sum{});
            } catch (const csp::usage_error& e) {
                EXPECT_NE(std::string(e.what()).find("6 elements do not split"), std::string::npos) << e.what();
                ++counts_refused;
            }
            // Rank 2 asks for a rank that does not exist: every rank hears
            // which rank asked for what, and none waits forever. (Stream 1:
            // a length that does not fit the counts, above, is an error one
            // rank may make alone, so it revoked stream 0: revocation.hpp.)
            cc::registry::put_get::for_each([&](auto a) {
                try {
                    a(c, c.rank(), c.rank() == 2 ? 9 : 0, cc::stream{1});
                    ADD_FAILURE() << grid::name_of(a) << " took a request for rank 9";
                } catch (const csp::usage_error& e) {
                    EXPECT_NE(
                        std::string(e.what()).find("rank 2 asked for the value of rank 9, outside the group of 4"),
                        std::string::npos)
                        << e.what();
                    ++requests_refused;
                }
            });
        });
    });
    EXPECT_EQ(counts_refused.load(), 12);
    EXPECT_EQ(requests_refused.load(), 8);
}

TEST(reduce_flat_in_order, gives_the_same_float_bits_every_run) {
    // Magnitudes far apart make the sum depend on the order of additions.
    auto value_of = [](int r) { return std::ldexp(1.0 + r / 7.0, (r * 37) % 60 - 30); };
    std::optional<std::uint64_t> first;
    const double want = *fold(0, 13, value_of, cc::sum{});
    for (int run = 0; run < 10; ++run)
        csp::run([&] {
            cc::run_local(13, [&](cc::local_communicator& c) {
                auto got = cc::reduce_flat_in_order(c, value_of(c.rank()), cc::sum{}, 5);
                if (c.rank() != 5) return;
                const auto bits = std::bit_cast<std::uint64_t>(*got);
                EXPECT_EQ(bits, std::bit_cast<std::uint64_t>(want));
                if (!first) first = bits;
                EXPECT_EQ(bits, *first);
            });
        }, {.threads = 2});
}

TEST(grid, the_shared_grid_passes_locally_on_one_and_two_threads) {
    for (int n : {1, 2, 3, 4, 5, 7, 8, 13}) {
        std::vector<std::string> wrong;
        std::mutex lock;
        csp::run([&] {
            cc::run_local(n, [&](cc::local_communicator& c) {
                auto w = grid::check_all(c);
                std::lock_guard lk(lock);
                wrong.insert(wrong.end(), w.begin(), w.end());
            });
        }, {.threads = static_cast<std::size_t>(1 + n % 2)});
        EXPECT_TRUE(wrong.empty()) << wrong.front();
    }
}
