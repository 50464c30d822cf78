// Shared reduction variables (shared.hpp, shared_group.hpp) over local
// channels: the CFL semantics, fusion counted through the trace, the SPMD
// check, failures, and processes of one rank.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "collectives/collectives.hpp"
#include "csp/process.hpp"
#include "csp/runtime.hpp"
#include "csp/timer.hpp"

namespace cc = csp::collectives;

namespace {

// Runs body(comm) on n local ranks inside a runtime.
template <class F>
void on_ranks(int n, F body) {
    csp::run([&] { cc::run_local(n, [&](cc::local_communicator& c) { body(c); }); });
}

// A user op that may be fused: the larger magnitude.
struct abs_max {
    static constexpr bool fusible = true;
    static constexpr bool commutes = true;
    double operator()(double a, double b) const { return std::abs(a) >= std::abs(b) ? a : b; }
};
// A fusible op on whole vectors (not element by element): the
// lexicographically larger one.
struct lex_max {
    static constexpr bool fusible = true;
    static constexpr bool commutes = true;
    std::vector<double> operator()(const std::vector<double>& a, const std::vector<double>& b) const {
        return a >= b ? a : b;
    }
};
// A user op that does not say it may be fused.
struct plain_op {
    double operator()(double a, double b) const { return a + b; }
};

// The compile-time refusals.
static_assert(!std::is_assignable_v<cc::shared<double>&, double>, "x = a (a rank's own value) must not compile");
static_assert(!std::is_assignable_v<cc::shared<double>&, int>, "x = 1 must not compile");
static_assert(std::is_assignable_v<cc::shared<double>&, cc::same_value<double>>, "x = same(v) is allowed");
static_assert(std::is_assignable_v<cc::shared<double>&, cc::shared<double>>, "x = y is allowed");
static_assert(!std::is_assignable_v<cc::shared<long, cc::sum>&, cc::shared<long, cc::maximum>>,
              "variables of different ops do not mix");
template <class X> concept can_multiply_local = requires(X& x) { x *= 2.0; };
static_assert(!can_multiply_local<cc::shared<double, cc::sum>>, "* is spelled for product only");
static_assert(can_multiply_local<cc::shared<double, cc::product>>);
template <class X> concept can_or = requires(X& x) { x |= 2; };
static_assert(can_or<cc::shared<unsigned, cc::bit_or>>);
static_assert(!can_or<cc::shared<unsigned, cc::bit_and>>);
static_assert(!cc::detail::fusible_op<plain_op>);
static_assert(cc::detail::fusible_op<abs_max>);

TEST(shared_semantics, contributions_sum_over_ranks_and_stay_pending_until_read) {
    on_ranks(4, [](auto& c) {
        cc::shared_group g(c);
        cc::shared<double> x(g, 10.0, "x");
        x += c.rank() + 1;  // x = 10 + (1+2+3+4)
        EXPECT_TRUE(x.pending());
        EXPECT_EQ(g.statistics().reductions, 0u);
        const double v = x;
        EXPECT_EQ(v, 20.0);
        EXPECT_FALSE(x.pending());
        EXPECT_EQ(g.statistics().reductions, 1u);
        // Reading again sends nothing.
        EXPECT_EQ(x.get(), 20.0);
        EXPECT_EQ(g.statistics().reductions, 1u);
    });
}

TEST(shared_semantics, every_operator_form_means_its_expansion) {
    on_ranks(3, [](auto& c) {
        const long r = c.rank();
        cc::shared_group g(c);
        cc::shared<long> a(g, 100), b(g, 100), d(g, 100), e(g, 1000), f(g, 5);
        a += r;           // 100 + 3
        b = b + r;        // the same
        d -= r;           // 100 - 3
        e = f + r;        // 5 + 3: f's value, everyone's r
        cc::shared<long> h(g, 0);
        h = r - f;        // sum(r) - f = 3 - 5
        cc::shared<long> k = a + b;  // shared + shared: local, contributions carried
        EXPECT_EQ(a.get(), 103);
        EXPECT_EQ(b.get(), 103);
        EXPECT_EQ(d.get(), 97);
        EXPECT_EQ(e.get(), 8);
        EXPECT_EQ(f.get(), 5);
        EXPECT_EQ(h.get(), -2);
        EXPECT_EQ(k.get(), 206);
        EXPECT_EQ(g.statistics().reductions, 1u) << "all of them resolved by one force point";
        // Read into a local, an expression is local: x - a is x's value minus
        // this rank's a, no contribution.
        const long local = a - r;
        EXPECT_EQ(local, 103 - r);
        EXPECT_FALSE(a.pending());
        // same(): a value known to be the same everywhere.
        a = cc::same(7L);
        EXPECT_EQ(a.get(), 7);
    });
}

TEST(shared_semantics, products_bitwise_min_max_and_user_ops) {
    on_ranks(4, [](auto& c) {
        const int r = c.rank();
        cc::shared_group g(c);
        cc::shared<double, cc::product> p(g, 2.0);
        p *= r + 1.0;                                 // 2 * 4!
        cc::shared<std::uint32_t, cc::bit_or> o(g, 0x100u);
        o |= 1u << r;
        cc::shared<std::uint32_t, cc::bit_and> an(g, 0xffu);
        an &= ~(1u << r);
        cc::shared<std::uint32_t, cc::bit_xor> xo(g, 0u);
        xo ^= static_cast<std::uint32_t>(r * 3);
        cc::shared<int, cc::minimum> lo(g, 100);
        lo.contribute(50 - r);
        cc::shared<int, cc::maximum> hi(g, -100);
        hi.contribute(r * r);
        cc::shared<double, abs_max> am(g, 0.5);
        am.contribute(r == 2 ? -9.0 : r);
        cc::shared<int, cc::logical_or> any(g, 0);
        any.contribute(r == 3);
        EXPECT_EQ(p.get(), 48.0);
        EXPECT_EQ(o.get(), 0x10fu);
        EXPECT_EQ(an.get(), 0xf0u);
        EXPECT_EQ(xo.get(), (0u ^ 3u ^ 6u ^ 9u));
        EXPECT_EQ(lo.get(), 47);
        EXPECT_EQ(hi.get(), 9);
        EXPECT_EQ(am.get(), -9.0);
        EXPECT_EQ(any.get(), 1);
        EXPECT_EQ(g.statistics().reductions, 1u);
        EXPECT_EQ(g.statistics().slots_reduced, 8u);
    });
}

TEST(shared_semantics, vectors_reduce_element_by_element) {
    on_ranks(3, [](auto& c) {
        const double r = c.rank();
        cc::shared_group g(c);
        cc::shared<std::vector<double>> v(g, std::vector<double>{1, 1, 1});
        v += std::vector<double>{r, 2 * r, 3 * r};
        v -= std::vector<double>{1, 0, 0};
        cc::shared<double> s(g, 0.0);
        s += r;
        EXPECT_EQ(v.get(), (std::vector<double>{1 + 3 - 3, 1 + 6, 1 + 9}));
        EXPECT_EQ(s.get(), 3.0);
        EXPECT_EQ(g.statistics().reductions, 1u);
        // A contribution of another length is refused where it is made.
        EXPECT_THROW(v += std::vector<double>{1.0}, csp::usage_error);
    });
}

TEST(shared_fusion, variance_fuses_two_updates_per_batch_into_one_reduction) {
    constexpr int n = 5, m = 12;
    cc::trace_log log;
    std::mutex lock;
    std::vector<std::vector<double>> results;
    on_ranks(4, [&](auto& c) {
        cc::traced tc(c, log);
        cc::shared_group g(tc);
        std::vector<double> var(n);
        for (int i = 0; i < n; ++i) {
            cc::shared<double> s1(g), s2(g);
            for (int j = c.rank(); j < m; j += c.size()) {
                const double x = i * 100 + j * j;
                s1 += x;
                s2 += x * x;
            }
            var[static_cast<std::size_t>(i)] = (s2 - s1 * s1 / m) / (m - 1);
        }
        EXPECT_EQ(g.statistics().reductions, static_cast<std::uint64_t>(n));
        std::lock_guard lk(lock);
        results.push_back(var);
    });
    // Against the sequential variance.
    for (int i = 0; i < n; ++i) {
        double s1 = 0, s2 = 0;
        for (int j = 0; j < m; ++j) {
            const double x = i * 100 + j * j;
            s1 += x;
            s2 += x * x;
        }
        for (auto& r : results) EXPECT_DOUBLE_EQ(r[static_cast<std::size_t>(i)], (s2 - s1 * s1 / m) / (m - 1));
    }
    const auto fusions = log.fusions();
    ASSERT_EQ(fusions.size(), static_cast<std::size_t>(4 * n));
    for (auto& f : fusions) {
        EXPECT_EQ(f.updates, 6u);  // 3 values per rank per batch, 2 updates each
        EXPECT_EQ(f.slots, 2u);
    }
    // One allreduce per force point, nothing else.
    EXPECT_EQ(log.algorithms().size(), static_cast<std::size_t>(4 * n));
}

TEST(shared_fusion, twenty_seven_updates_over_three_force_points_make_three_reductions) {
    cc::trace_log log;
    on_ranks(4, [&](auto& c) {
        cc::traced tc(c, log);
        cc::shared_group g(tc);
        std::vector<cc::shared<double>> env;
        for (int k = 0; k < 27; ++k) env.emplace_back(g, 0.0, "env" + std::to_string(k));
        double seen = 0;
        for (int phase = 0; phase < 3; ++phase) {
            for (int k = phase * 9; k < phase * 9 + 9; ++k) env[static_cast<std::size_t>(k)] += c.rank() + k;
            seen += env[static_cast<std::size_t>(phase * 9)];  // the phase's force point
        }
        EXPECT_EQ(seen, (0 + 1 + 2 + 3) * 3 + 4 * (0 + 9 + 18));
        EXPECT_EQ(g.statistics().updates, 27u);
        EXPECT_EQ(g.statistics().reductions, 3u);
    });
    const auto fusions = log.fusions();
    ASSERT_EQ(fusions.size(), 12u);
    for (auto& f : fusions) EXPECT_EQ(f.updates, 9u);
}

TEST(shared_fusion, fused_results_equal_separate_allreduces_for_every_op) {
    on_ranks(5, [](auto& c) {
        const long r = c.rank();
        cc::shared_group g(c);
        cc::shared<long> s(g);
        cc::shared<long, cc::product> p(g, 1);
        cc::shared<long, cc::minimum> lo(g, 1000);
        cc::shared<long, cc::maximum> hi(g, -1000);
        cc::shared<long, cc::bit_xor> x(g);
        const long v = r * 7 - 11;
        s += v;
        p *= v;
        lo.contribute(v);
        hi.contribute(v);
        x ^= v;
        EXPECT_EQ(s.get(), cc::allreduce(c, v, cc::sum{}));
        EXPECT_EQ(p.get(), cc::allreduce(c, v, cc::product{}));
        EXPECT_EQ(lo.get(), std::min(1000L, cc::allreduce(c, v, cc::minimum{})));
        EXPECT_EQ(hi.get(), std::max(-1000L, cc::allreduce(c, v, cc::maximum{})));
        EXPECT_EQ(x.get(), cc::allreduce(c, v, cc::bit_xor{}));
    });
}

// A force point folds each run of adjacent slots of one element-wise kind
// with one call; slots of other kinds, and a vector op that is not
// element-wise, end a run. Every slot must still get its own result.
TEST(shared_fusion, adjacent_slots_of_one_kind_fold_as_one_run_and_other_kinds_split_runs) {
    on_ranks(3, [](auto& c) {
        const int r = c.rank();
        cc::shared_group g(c);
        cc::shared<double> a(g, 1.0), b(g, 2.0);                          // one run
        cc::shared<double, cc::maximum> m(g, -5.0);                       // splits it
        cc::shared<double> d(g);                                          // a new run
        cc::shared<std::int32_t> i1(g, 10), i2(g, 20);                    // another kind: padded words
        cc::shared<std::vector<double>> v1(g, {0, 0}), v2(g, {1, 1, 1});  // element-wise vectors, one run
        cc::shared<std::vector<double>, lex_max> w(g, {0.0, 0.0});        // not element-wise
        cc::shared<std::vector<double>> v3(g, {5});
        a += r;
        b += 10.0 * r;
        m.contribute(r == 1 ? 7.0 : -r);
        d -= r;
        i1 += r;
        i2 += -2 * r;
        v1 += std::vector<double>{double(r), 2.0 * r};
        v2 += std::vector<double>{1, double(r), 0};
        w.contribute({double(r % 2), double(r)});
        v3 += std::vector<double>{double(r * r)};
        EXPECT_EQ(a.get(), 1.0 + 3.0);
        EXPECT_EQ(b.get(), 2.0 + 30.0);
        EXPECT_EQ(m.get(), 7.0);
        EXPECT_EQ(d.get(), -3.0);
        EXPECT_EQ(i1.get(), 13);
        EXPECT_EQ(i2.get(), 14);
        EXPECT_EQ(v1.get(), (std::vector<double>{3, 6}));
        EXPECT_EQ(v2.get(), (std::vector<double>{4, 4, 1}));
        EXPECT_EQ(w.get(), (std::vector<double>{1, 1}));  // rank 1's {1, 1} is the largest
        EXPECT_EQ(v3.get(), (std::vector<double>{10}));
        EXPECT_EQ(g.statistics().reductions, 1u);
        EXPECT_EQ(g.statistics().slots_reduced, 10u);
    });
}

// A pending vector variable assigned an expression of another length keeps
// its slot; the slot's payload takes the new length (and nothing is written
// past it).
TEST(shared_fusion, a_pending_vector_assigned_another_length_reduces_the_new_length) {
    on_ranks(3, [](auto& c) {
        const double r = c.rank();
        cc::shared_group g(c);
        cc::shared<std::vector<double>> x(g, std::vector<double>{0, 0});
        cc::shared<std::vector<double>> y(g, std::vector<double>{1, 1, 1, 1, 1});
        cc::shared<double> after(g);
        x += std::vector<double>{r, r};                          // pending, 2 elements
        x = y + std::vector<double>{r, 0, 0, 0, 2 * r};          // pending, 5 elements
        after += r;
        EXPECT_EQ(x.get(), (std::vector<double>{4, 1, 1, 1, 7}));
        EXPECT_EQ(after.get(), 3.0);
        EXPECT_EQ(y.get(), (std::vector<double>{1, 1, 1, 1, 1}));
        EXPECT_EQ(g.statistics().reductions, 1u);
    });
}

TEST(shared_fusion, flush_resolves_everything_and_sizes_one_to_eight_agree) {
    for (int n : {1, 2, 3, 5, 8}) {
        on_ranks(n, [n](auto& c) {
            cc::shared_group g(c);
            cc::shared<long> a(g), b(g);
            a += 1;
            b += c.rank();
            EXPECT_EQ(g.pending_slots(), 2u);
            g.flush();
            EXPECT_EQ(g.pending_slots(), 0u);
            EXPECT_FALSE(a.pending());
            EXPECT_EQ(a.get(), n);
            EXPECT_EQ(b.get(), n * (n - 1) / 2);
            g.flush();  // nothing pending: no reduction
            EXPECT_EQ(g.statistics().reductions, 1u);
        });
    }
}

TEST(shared_fusion, groups_over_split_communicators_and_streams_stay_apart) {
    on_ranks(6, [](auto& c) {
        const long r = c.rank();
        auto half = cc::split(c, int(r % 2), int(r));
        cc::shared_group in_half(*half);
        cc::shared_group everyone(c, cc::stream{3});
        cc::shared<long> h(in_half), e(everyone);
        h += r;
        e += r;
        // Both force points in one expression: two reductions, each in its
        // own group and stream.
        EXPECT_EQ(h.get() + e.get(), (r % 2 == 0 ? 0 + 2 + 4 : 1 + 3 + 5) + 15);
        EXPECT_EQ(in_half.statistics().reductions, 1u);
        EXPECT_EQ(everyone.statistics().reductions, 1u);
    });
}

TEST(shared_spmd, different_pending_sets_are_reported_with_both_sets_at_every_rank) {
    std::mutex lock;
    std::vector<std::string> errors;
    on_ranks(3, [&](auto& c) {
        cc::shared_group g(c);
        cc::shared<double> x(g, 0.0, "x"), y(g, 0.0, "y");
        x += 1.0;
        if (c.rank() == 1) y += 1.0;  // not SPMD
        try {
            (void)x.get();
            ADD_FAILURE() << "rank " << c.rank() << " read a value";
        } catch (const csp::usage_error& e) {
            std::lock_guard lk(lock);
            errors.push_back(e.what());
        }
        // The group stays failed.
        EXPECT_THROW(g.flush(), csp::usage_error);
    });
    ASSERT_EQ(errors.size(), 3u);
    for (auto& e : errors) {
        EXPECT_NE(e.find("different pending updates"), std::string::npos) << e;
        EXPECT_NE(e.find("{x: sum<double> (1 words)}"), std::string::npos) << e;
        EXPECT_NE(e.find("{x: sum<double> (1 words), y: sum<double> (1 words)}"), std::string::npos) << e;
    }
}

TEST(shared_spmd, the_same_number_of_updates_to_other_variables_is_a_mismatch_too) {
    std::mutex lock;
    std::vector<std::string> errors;
    on_ranks(3, [&](auto& c) {
        cc::shared_group g(c);
        cc::shared<double> x(g, 0.0, "x"), y(g, 0.0, "y");
        if (c.rank() == 1) y += 1.0;
        else x += 1.0;
        try {
            g.flush();
        } catch (const csp::usage_error& e) {
            std::lock_guard lk(lock);
            errors.push_back(e.what());
        }
    });
    ASSERT_EQ(errors.size(), 3u);
    for (auto& e : errors) {
        EXPECT_NE(e.find("{x: sum<double> (1 words)}"), std::string::npos) << e;
        EXPECT_NE(e.find("{y: sum<double> (1 words)}"), std::string::npos) << e;
    }
}

TEST(shared_spmd, check_mode_reports_a_rank_that_skipped_an_update) {
    std::mutex lock;
    int reported = 0;
    on_ranks(2, [&](auto& c) {
        cc::shared_options o;
        o.check_every_force = true;
        cc::shared_group g(c, {}, o);
        cc::shared<double> x(g, 0.0, "x");
        if (c.rank() == 0) x += 1.0;  // rank 1 has nothing pending
        try {
            (void)x.get();
        } catch (const csp::usage_error& e) {
            std::lock_guard lk(lock);
            ++reported;
            EXPECT_NE(std::string(e.what()).find("{}"), std::string::npos) << e.what();
        }
    });
    EXPECT_EQ(reported, 2);
}

// Replicas that differ: each rank read back its own initial value plus the
// sum, four different "shared" values, with no error.
TEST(shared_spmd, an_initial_value_that_differs_between_ranks_fails_every_rank_naming_the_variable) {
    std::mutex lock;
    std::vector<std::string> errors;
    on_ranks(4, [&](auto& c) {
        cc::shared_group g(c);
        cc::shared<double> same(g, 1.0, "same"), total(g, double(c.rank()), "total");  // total: not SPMD
        cc::shared<std::vector<long>> v(g, std::vector<long>{7, 7}, "v");
        same += 1.0;
        total += 1.0;
        v += std::vector<long>{1, 2};
        try {
            (void)total.get();
            ADD_FAILURE() << "rank " << c.rank() << " read a value";
        } catch (const csp::usage_error& e) {
            std::lock_guard lk(lock);
            errors.push_back(e.what());
        }
        EXPECT_THROW((void)same.get(), csp::usage_error);  // the group failed
    });
    ASSERT_EQ(errors.size(), 4u);
    for (auto& e : errors) {
        EXPECT_NE(e.find("different values of total ("), std::string::npos) << e;
        EXPECT_EQ(e.find("same"), e.find("same initial value")) << "only total differs: " << e;
    }
}

TEST(shared_spmd, a_same_value_that_differs_between_ranks_fails_every_rank_with_vectors_too) {
    std::mutex lock;
    std::vector<std::string> errors;
    on_ranks(3, [&](auto& c) {
        cc::shared_group g(c);
        cc::shared<std::vector<double>> v(g, std::vector<double>(5, 0.0), "v");
        cc::shared<int, cc::maximum> m(g, 0, "m");
        std::vector<double> mine(5, 1.0);
        if (c.rank() == 0) mine[4] = 1.5;  // one element of one rank's copy
        v = cc::same(mine);
        m = cc::same(c.rank() == 0 ? 3 : 4);
        v += std::vector<double>(5, 2.0);
        m.contribute(c.rank());
        try {
            g.flush();
            ADD_FAILURE() << "rank " << c.rank() << " flushed";
        } catch (const csp::usage_error& e) {
            std::lock_guard lk(lock);
            errors.push_back(e.what());
        }
    });
    ASSERT_EQ(errors.size(), 3u);
    for (auto& e : errors) EXPECT_NE(e.find("different values of v, m ("), std::string::npos) << e;
}

TEST(shared_spmd, equal_replicas_of_every_kind_pass_the_value_check) {
    // -0.0 and NaN are values like any other: equal bits pass.
    on_ranks(3, [](auto& c) {
        cc::shared_group g(c);
        cc::shared<double> z(g, -0.0, "z"), nan(g, std::nan(""), "nan");
        cc::shared<float, cc::minimum> f(g, 2.5f, "f");
        cc::shared<std::uint8_t, cc::bit_or> b(g, std::uint8_t{1}, "b");
        cc::shared<std::vector<std::int16_t>> v(g, std::vector<std::int16_t>{1, 2, 3}, "v");
        z += 1.0;
        nan += 1.0;
        f.contribute(static_cast<float>(c.rank()));
        b |= static_cast<std::uint8_t>(2 << c.rank());
        v += std::vector<std::int16_t>{1, 1, 1};
        g.flush();
        EXPECT_EQ(z.get(), 3.0);
        EXPECT_TRUE(std::isnan(nan.get()));
        EXPECT_EQ(f.get(), 0.0f);
        EXPECT_EQ(b.get(), 1 | 2 | 4 | 8);
        EXPECT_EQ(v.get(), (std::vector<std::int16_t>{4, 5, 6}));
    });
}
static_assert(cc::detail::prints_by_bytes<double> && cc::detail::prints_by_bytes<std::int8_t>);
static_assert(!cc::detail::prints_by_bytes<long double>, "its padding bytes are not its value");
struct with_a_hole {
    char c;
    double d;
};
static_assert(!cc::detail::prints_by_bytes<with_a_hole>);

TEST(shared_failure, a_failing_rank_fails_every_ranks_read_with_its_error) {
    std::mutex lock;
    std::vector<std::string> seen;
    EXPECT_THROW(on_ranks(3, [&](auto& c) {
        cc::shared_group g(c);
        cc::shared<double> x(g, 0.0, "x");
        x += 1.0;
        if (c.rank() == 2) throw std::runtime_error("rank 2 lost its data");
        try {
            (void)x.get();
        } catch (const std::runtime_error& e) {
            std::lock_guard lk(lock);
            seen.push_back(e.what());
            // Reading again rethrows the same error.
            try {
                (void)x.get();
            } catch (const std::runtime_error& again) {
                seen.push_back(again.what());
            }
            throw;
        }
    }), std::runtime_error);
    ASSERT_EQ(seen.size(), 4u);
    for (auto& s : seen) EXPECT_EQ(s, "rank 2 lost its data");
}

TEST(shared_processes, contributions_from_several_processes_of_a_rank_fold_together) {
    on_ranks(3, [](auto& c) {
        cc::shared_group g(c);
        cc::shared<long> a(g), b(g);
        // Four processes per rank update in any interleaving; the slots go
        // out in variable order, so the ranks agree.
        csp::par([&] { for (int i = 0; i < 100; ++i) a += 1; }, [&] { for (int i = 0; i < 100; ++i) b += 2; },
                 [&] { for (int i = 0; i < 100; ++i) { b += 1; csp::yield(); } },
                 [&] { for (int i = 0; i < 100; ++i) { a += c.rank(); csp::yield(); } });
        EXPECT_EQ(g.statistics().updates, 400u);
        // Two processes read at once: one force point runs, the other waits for it.
        long ra = 0, rb = 0;
        csp::par([&] { ra = a; }, [&] { rb = b; });
        EXPECT_EQ(ra, 3 * 100 + 100 * (0 + 1 + 2));
        EXPECT_EQ(rb, 3 * 300);
        EXPECT_EQ(g.statistics().reductions, 1u);
    });
}

TEST(shared_processes, stress_on_two_worker_threads_counts_every_contribution) {
    // 4 ranks x 3 processes each, 40 rounds: every round each process adds
    // to two variables (in its own order) and one process of each rank
    // reads while the others may still be adding to the next round's.
    constexpr int ranks = 4, procs = 3, rounds = 40;
    std::atomic<int> rounds_checked{0};
    csp::run([&] {
        cc::run_local(ranks, [&](cc::local_communicator& c) {
            cc::shared_group g(c);
            cc::shared<long> a(g, 0, "a");
            cc::shared<long> b(g, 0, "b");
            for (int round = 1; round <= rounds; ++round) {
                csp::par([&] { for (int p = 0; p < procs; ++p) { a += round; csp::yield(); } },
                         [&] { for (int p = 0; p < procs; ++p) { b += 1; csp::yield(); } });
                long ra = 0, rb = 0;
                csp::par([&] { ra = a; }, [&] { rb = b; });
                const long want_a = long(ranks) * procs * round * (round + 1) / 2;
                const long want_b = long(ranks) * procs * round;
                if (ra == want_a && rb == want_b) ++rounds_checked;
                else ADD_FAILURE() << "round " << round << ": a " << ra << " want " << want_a << ", b " << rb;
            }
            EXPECT_EQ(g.statistics().updates, std::uint64_t(2) * procs * rounds);
            EXPECT_EQ(g.statistics().reductions, std::uint64_t(rounds));
        });
    }, csp::runtime_options{.threads = 2});
    EXPECT_EQ(rounds_checked.load(), ranks * rounds);
}

TEST(shared_processes, copies_moves_and_gone_variables_keep_the_ranks_in_step) {
    on_ranks(4, [](auto& c) {
        cc::shared_group g(c);
        cc::shared<long> a(g, 1, "a");
        a += 1;
        {
            cc::shared<long> gone(g, 0, "gone");
            gone += 5;  // still reduced at the next force point, result unused
        }
        cc::shared<long> copy = a;  // its own contribution: a's pending one
        cc::shared<long> moved = std::move(copy);
        std::vector<cc::shared<long>> many;
        for (int i = 0; i < 10; ++i) many.emplace_back(g, i);  // reallocations move pending variables
        for (auto& m : many) m += 1;
        EXPECT_EQ(a.get(), 5);
        EXPECT_EQ(moved.get(), 5);
        for (int i = 0; i < 10; ++i) EXPECT_EQ(many[static_cast<std::size_t>(i)].get(), i + 4);
        EXPECT_EQ(g.statistics().reductions, 1u);
        std::ostringstream os;
        os << a;
        EXPECT_EQ(os.str(), "5");
    });
}

}  // namespace
