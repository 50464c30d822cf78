#pragma once
// The values and ops the algorithm grid runs with, and the sequential
// references they are checked against. Shared by the local and the network
// grids.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/collectives.hpp"
#include "collectives/group.hpp"
#include "collectives/hierarchy.hpp"

namespace grid {

namespace cc = csp::collectives;

// 2x2 matrices modulo a prime: associative, not commutative.
struct mat2 {
    std::int64_t a, b, c, d;
    friend bool operator==(const mat2&, const mat2&) = default;
};
inline constexpr std::int64_t prime = 1'000'003;
inline mat2 mat_of(int r) { return {1, r + 1, 2 * r + 1, 1}; }
inline const auto mat_product = cc::ordered([](const mat2& x, const mat2& y) {
    return mat2{(x.a * y.a + x.b * y.c) % prime, (x.a * y.b + x.b * y.d) % prime, (x.c * y.a + x.d * y.c) % prime,
                (x.c * y.b + x.d * y.d) % prime};
});
// Element by element, for reduce_scatter with an op that does not commute.
inline const auto mats_product = cc::ordered([](const std::vector<mat2>& x, const std::vector<mat2>& y) {
    std::vector<mat2> out;
    for (std::size_t i = 0; i < x.size(); ++i)
        out.push_back(mat2{(x[i].a * y[i].a + x[i].b * y[i].c) % prime, (x[i].a * y[i].b + x[i].b * y[i].d) % prime,
                           (x[i].c * y[i].a + x[i].d * y[i].c) % prime, (x[i].c * y[i].b + x[i].d * y[i].d) % prime});
    return out;
});
// The same as an op that says it acts element by element (so the algorithms
// that cut vectors into segments take it) and does not commute.
struct mats_in_order {
    static constexpr bool commutes = false;
    static constexpr bool elementwise = true;
    std::vector<mat2> operator()(const std::vector<mat2>& a, const std::vector<mat2>& b) const {
        return mats_product(a, b);
    }
};
inline const auto concat = cc::ordered([](const std::string& x, const std::string& y) { return x + y; });

inline std::vector<std::int64_t> numbers_of(int r, std::size_t len) {
    std::vector<std::int64_t> v(len);
    for (std::size_t i = 0; i < len; ++i) v[i] = (r * 7919 + static_cast<std::int64_t>(i) * 104729) % 1000 - 500;
    return v;
}
inline std::vector<std::uint64_t> bits_of(int r, std::size_t len) {
    std::vector<std::uint64_t> v(len);
    for (std::size_t i = 0; i < len; ++i)
        v[i] = (0x9e3779b97f4a7c15ull * (static_cast<std::uint64_t>(r) + 1)) >> (i % 17);
    return v;
}
inline std::vector<mat2> mats_of(int r, std::size_t len) {
    std::vector<mat2> v;
    for (std::size_t i = 0; i < len; ++i) v.push_back(mat2{1, r + 1, static_cast<std::int64_t>(i) + 2, 1});
    return v;
}
// Irregular reduce_scatter blocks: r % 3 elements for rank r.
inline std::vector<std::size_t> counts_for(int n) {
    std::vector<std::size_t> c;
    for (int r = 0; r < n; ++r) c.push_back(static_cast<std::size_t>(r % 3));
    return c;
}
inline std::size_t total(const std::vector<std::size_t>& counts) {
    std::size_t t = 0;
    for (auto c : counts) t += c;
    return t;
}
// Block `b` of v under `counts`.
template <class V>
V block(const V& v, const std::vector<std::size_t>& counts, int b) {
    std::size_t at = 0;
    for (int r = 0; r < b; ++r) at += counts[static_cast<std::size_t>(r)];
    return V(v.begin() + static_cast<std::ptrdiff_t>(at),
             v.begin() + static_cast<std::ptrdiff_t>(at + counts[static_cast<std::size_t>(b)]));
}
// The rank whose value rank `me` asks for in put_get: many ask for the same
// one, and some ask for themselves.
inline int named_by(int me, int n) { return (me * me + 1) % n; }

inline std::string text_of(int r, std::size_t len) { return std::string(len, static_cast<char>('a' + r % 26)); }

// v(lo) op ... op v(hi - 1), or nothing for an empty range.
template <class F, class Op>
auto fold(int lo, int hi, F value_of, const Op& op) -> std::optional<decltype(value_of(0))> {
    std::optional<decltype(value_of(0))> acc;
    for (int r = lo; r < hi; ++r) acc = acc ? op(*acc, value_of(r)) : value_of(r);
    return acc;
}

// The reduce algorithms of the registry, by name.
template <class C, class T, class Op>
std::optional<T> reduce_by(std::string_view a, C& c, T v, const Op& op, int root) {
    return cc::registry::reduce::run(a, c, std::move(v), op, root);
}

template <class A>
std::string name_of(const A&) {
    return std::string(A::info.collective) + " " + std::string(A::info.name);
}

}  // namespace grid

namespace grid {

// Every algorithm at this rank for every root, against the references;
// returns what went wrong ("" entries never appear). All ranks of `c` must
// call it together. Used where GoogleTest's assertions cannot reach: ranks
// that are separate OS processes.
template <class C>
std::vector<std::string> check_all(C& c) {
    std::vector<std::string> wrong;
    const int n = c.size(), me = c.rank();
    auto expect = [&](bool ok, const std::string& what) {
        if (!ok) wrong.push_back("rank " + std::to_string(me) + " of " + std::to_string(n) + ": " + what);
    };
    auto expect_at_root = [&](const auto& got, const auto& want, int root, const std::string& what) {
        expect(got.has_value() == (me == root), what + ": value at the wrong ranks");
        if (got && want) expect(*got == *want, what + ": wrong value");
    };

    for (int root = 0; root < n; ++root) {
        const std::string at = " root " + std::to_string(root);
        for (std::size_t len : {0u, 1u, 17u}) {
            const std::string sz = " len " + std::to_string(len);
            auto numbers = [len](int r) { return numbers_of(r, len); };
            auto text = [len](int r) { return text_of(r, len); };
            const auto mine = me == root ? numbers(root) : std::vector<std::int64_t>{};
            cc::registry::broadcast::for_each([&](auto a) {
                expect(a(c, mine, root) == numbers(root), name_of(a) + at + sz);
            });
            cc::registry::reduce::for_each([&](auto a) {
                const std::string what = name_of(a) + at + sz;
                expect_at_root(a(c, numbers(me), cc::sum{}, root), fold(0, n, numbers, cc::sum{}), root, what + " sum");
                expect_at_root(a(c, numbers(me), cc::minimum{}, root), fold(0, n, numbers, cc::minimum{}), root,
                               what + " min");
                if (a.info.needs_commuting_op || a.info.needs_elementwise) return;
                expect_at_root(a(c, text(me), concat, root), fold(0, n, text, concat), root, what + " concat");
            });
        }
        cc::registry::reduce::for_each([&](auto a) {
            if (!a.info.needs_commuting_op && !a.info.needs_elementwise)
                expect_at_root(a(c, mat_of(me), mat_product, root), fold(0, n, mat_of, mat_product), root,
                               name_of(a) + at + " matrices");
        });

        std::vector<std::string> all;
        for (int r = 0; r < n; ++r) all.push_back(text_of(r, static_cast<std::size_t>(r % 3)));
        const auto& own = all[static_cast<std::size_t>(me)];
        cc::registry::gather::for_each([&](auto a) {
            expect_at_root(a(c, own, root), std::optional(all), root, name_of(a) + at);
        });
        auto input = me == root ? all : std::vector<std::string>{};
        cc::registry::scatter::for_each([&](auto a) { expect(a(c, input, root) == own, name_of(a) + at); });
    }

    for (std::size_t len : {0u, 1u, 17u}) {
        auto numbers = [len](int r) { return numbers_of(r, len); };
        auto text = [len](int r) { return text_of(r, len); };
        const std::string sz = " len " + std::to_string(len);
        cc::registry::allreduce::for_each([&](auto a) {
            expect(a(c, numbers(me), cc::sum{}) == *fold(0, n, numbers, cc::sum{}), name_of(a) + " sum" + sz);
            expect(a(c, numbers(me), cc::maximum{}) == *fold(0, n, numbers, cc::maximum{}), name_of(a) + " max" + sz);
            if (a.info.needs_elementwise) return;  // vectors with built-in ops only
            expect(a(c, text(me), concat) == *fold(0, n, text, concat), name_of(a) + " concat" + sz);
        });
    }
    cc::registry::allreduce::for_each([&](auto a) {
        if (a.info.needs_elementwise) return;
        expect(a(c, mat_of(me), mat_product) == *fold(0, n, mat_of, mat_product), name_of(a) + " matrices");
    });
    // min keeps its left operand of two equal ones, so of -0.0 and 0.0 the
    // sign bit tells which side each fold put a rank's value on: an
    // algorithm that keeps rank order ends with rank 0's signs.
    cc::registry::allreduce::for_each([&](auto a) {
        if (a.info.needs_commuting_op) return;
        auto zeros = [](int r) {
            return std::vector<double>{r % 2 ? -0.0 : 0.0, r % 2 ? 0.0 : -0.0, r == 1 ? -0.0 : 0.0};
        };
        const auto got = a(c, zeros(me), cc::minimum{});
        bool same = got.size() == 3;
        for (std::size_t i = 0; same && i < 3; ++i) same = std::signbit(got[i]) == std::signbit(zeros(0)[i]);
        expect(same, name_of(a) + " min keeps rank order on signed zeros");
    });

    cc::registry::barrier::for_each([&](auto a) { a(c); });

    std::vector<std::string> everyone;
    for (int r = 0; r < n; ++r) everyone.push_back(text_of(r, 2));
    cc::registry::allgather::for_each([&](auto a) { expect(a(c, text_of(me, 2)) == everyone, name_of(a)); });
    // Vectors of numbers, which the ring allgather and the pipelined
    // broadcast relay as they arrived (relay.hpp); 20,000 of them are three
    // of the pipeline's segments, each lent from the root's vector, as the
    // ring lends each rank's own (160 KB).
    for (std::size_t len : {0u, 3u, 20000u}) {
        const std::string sz = " numbers len " + std::to_string(len);
        std::vector<std::vector<std::int64_t>> all;
        for (int r = 0; r < n; ++r) all.push_back(numbers_of(r, len));
        cc::registry::allgather::for_each([&](auto a) { expect(a(c, numbers_of(me, len)) == all, name_of(a) + sz); });
        const int root = n - 1;
        const auto mine = me == root ? numbers_of(root, len) : std::vector<std::int64_t>{};
        cc::registry::broadcast::for_each([&](auto a) {
            expect(a(c, mine, root) == numbers_of(root, len), name_of(a) + " root " + std::to_string(root) + sz);
        });
    }
    // Vectors large enough that the algorithms sending parts of the rank's
    // own vector lend them (receive_view.hpp's send_part) instead of
    // copying: each part of 40,000 numbers is at least 32 KiB up to 9 ranks.
    {
        constexpr std::size_t len = 40000;
        auto numbers = [](int r) { return numbers_of(r, len); };
        cc::registry::allreduce::for_each([&](auto a) {
            expect(a(c, numbers(me), cc::sum{}) == *fold(0, n, numbers, cc::sum{}), name_of(a) + " sum, lent parts");
            expect(a(c, numbers(me), cc::maximum{}) == *fold(0, n, numbers, cc::maximum{}),
                   name_of(a) + " max, lent parts");
        });
        for (int root : {0, n - 1})
            cc::registry::reduce::for_each([&](auto a) {
                expect_at_root(a(c, numbers(me), cc::sum{}, root), fold(0, n, numbers, cc::sum{}), root,
                               name_of(a) + " root " + std::to_string(root) + " sum, lent parts");
            });
        // Several segments of the pipelined reduce, in rank order.
        auto mats = [](int r) { return mats_of(r, 5000); };
        for (int root : {0, n - 1})
            expect_at_root(cc::reduce_pipeline(c, mats(me), mats_in_order{}, root), fold(0, n, mats, mats_in_order{}),
                           root, "reduce/pipeline root " + std::to_string(root) + " matrices in rank order");
        std::vector<std::size_t> even(static_cast<std::size_t>(n), len / static_cast<std::size_t>(n));
        even[0] += len % static_cast<std::size_t>(n);
        cc::registry::reduce_scatter::for_each([&](auto a) {
            expect(a(c, numbers(me), even, cc::sum{}) == block(*fold(0, n, numbers, cc::sum{}), even, me),
                   name_of(a) + " sum, lent parts");
        });
    }

    std::vector<int> out, want;
    for (int j = 0; j < n; ++j) out.push_back(me * 100 + j), want.push_back(j * 100 + me);
    cc::registry::alltoall::for_each([&](auto a) { expect(a(c, out) == want, name_of(a)); });
    auto letter = [](int r) { return std::string(1, static_cast<char>('a' + r)); };
    cc::registry::scan::for_each([&](auto a) {
        expect(a(c, letter(me), concat) == *fold(0, me + 1, letter, concat), name_of(a));
    });
    cc::registry::exscan::for_each([&](auto a) {
        expect(a(c, letter(me), concat) == fold(0, me, letter, concat), name_of(a));
    });

    // STAPERS's operations: bitwise and logical reductions and scans,
    // reduce_scatter (irregular blocks, some empty), put_get, sendrecv.
    for (std::size_t len : {0u, 1u, 17u}) {
        auto bits = [len](int r) { return bits_of(r, len); };
        const std::string sz = " len " + std::to_string(len);
        cc::registry::allreduce::for_each([&](auto a) {
            expect(a(c, bits(me), cc::bit_and{}) == *fold(0, n, bits, cc::bit_and{}), name_of(a) + " bit_and" + sz);
            expect(a(c, bits(me), cc::bit_or{}) == *fold(0, n, bits, cc::bit_or{}), name_of(a) + " bit_or" + sz);
            expect(a(c, bits(me), cc::bit_xor{}) == *fold(0, n, bits, cc::bit_xor{}), name_of(a) + " bit_xor" + sz);
        });
        cc::registry::scan::for_each([&](auto a) {
            expect(a(c, bits(me), cc::bit_xor{}) == *fold(0, me + 1, bits, cc::bit_xor{}),
                   name_of(a) + " bit_xor" + sz);
        });
    }
    cc::registry::allreduce::for_each([&](auto a) {
        if (a.info.needs_elementwise) return;
        expect(a(c, me % 2, cc::logical_and{}) == 0, name_of(a) + " logical_and (rank 0 passes 0)");
        // One rank applies no op: its value comes back as it is.
        expect(a(c, me == n - 1 ? 7 : 0, cc::logical_or{}) == (n == 1 ? 7 : 1), name_of(a) + " logical_or");
        expect(a(c, true, cc::logical_and{}), name_of(a) + " logical_and of trues");
    });
    const auto counts = counts_for(n);
    const std::size_t length = total(counts);
    auto longs = [length](int r) { return numbers_of(r, length); };
    auto bits = [length](int r) { return bits_of(r, length); };
    auto mats = [length](int r) { return mats_of(r, length); };
    cc::registry::reduce_scatter::for_each([&](auto a) {
        expect(a(c, longs(me), counts, cc::sum{}) == block(*fold(0, n, longs, cc::sum{}), counts, me),
               name_of(a) + " sum");
        expect(a(c, bits(me), counts, cc::bit_xor{}) == block(*fold(0, n, bits, cc::bit_xor{}), counts, me),
               name_of(a) + " bit_xor");
        if (a.info.needs_commuting_op) return;
        expect(a(c, mats(me), counts, mats_product) == block(*fold(0, n, mats, mats_product), counts, me),
               name_of(a) + " matrices, in rank order");
    });
    cc::registry::put_get::for_each([&](auto a) {
        expect(a(c, text_of(me, 3), named_by(me, n)) == text_of(named_by(me, n), 3), name_of(a));
    });
    expect(cc::sendrecv(c, me, (me + 1) % n, (me + n - 1) % n) == (me + n - 1) % n, "sendrecv shift");

    // Groups: split by parity (the last rank opts out), keys reversing rank
    // order; then two-level collectives with hosts made of pairs of ranks
    // and with hosts interleaved.
    {
        auto g = cc::split(c, me == n - 1 && n > 1 ? cc::undefined : me % 2, -me);
        expect(g.has_value() == (me != n - 1 || n == 1), "split: who got a group");
        if (g) {
            std::vector<int> want;
            for (int r = n - 1; r >= 0; --r)
                if (r % 2 == me % 2 && (r != n - 1 || n == 1)) want.push_back(r);
            expect(g->members() == want, "split: members ordered by key");
            expect(cc::allgather(*g, me) == want, "split: allgather inside the group");
        }
    }
    for (bool pairs : {true, false}) {
        const std::string layout = pairs ? " hosts of pairs" : " interleaved hosts";
        cc::hierarchy h(c, "host" + std::to_string(pairs ? me / 2 : me % 2));
        auto letter = [](int r) { return std::string(1, static_cast<char>('a' + r)); };
        expect(cc::hierarchical::allreduce(h, long(me + 1), cc::sum{}) == long(n) * (n + 1) / 2,
               "hierarchical allreduce sum" + layout);
        expect(cc::hierarchical::allreduce(h, letter(me), concat) == *fold(0, n, letter, concat),
               "hierarchical allreduce concat" + layout);
        // Split across the ranks of hosts of equal size, where there are such.
        auto large = [](int r) { return numbers_of(r, 10003); };
        if (h.across() != nullptr)
            expect(cc::hierarchical::allreduce_across(h, large(me), cc::sum{}) == *fold(0, n, large, cc::sum{}),
                   "hierarchical allreduce_across" + layout);
        for (int root = 0; root < n; ++root) {
            auto r = cc::hierarchical::reduce(h, letter(me), concat, root);
            expect(r.has_value() == (me == root) && (!r || *r == *fold(0, n, letter, concat)),
                   "hierarchical reduce root " + std::to_string(root) + layout);
            expect(cc::hierarchical::broadcast(h, me == root ? letter(root) : std::string(), root) == letter(root),
                   "hierarchical broadcast root " + std::to_string(root) + layout);
            auto g = cc::hierarchical::gather(h, letter(me), root);
            std::vector<std::string> everyone;
            for (int q = 0; q < n; ++q) everyone.push_back(letter(q));
            expect(g.has_value() == (me == root) && (!g || *g == everyone),
                   "hierarchical gather root " + std::to_string(root) + layout);
        }
        std::vector<std::string> everyone;
        for (int q = 0; q < n; ++q) everyone.push_back(letter(q));
        expect(cc::hierarchical::allgather(h, letter(me)) == everyone, "hierarchical allgather" + layout);
        expect(cc::hierarchical::scan(h, letter(me), concat) == *fold(0, me + 1, letter, concat),
               "hierarchical scan" + layout);
        expect(cc::hierarchical::exscan(h, letter(me), concat) == fold(0, me, letter, concat),
               "hierarchical exscan" + layout);
        cc::hierarchical::local_barrier(h);
        cc::hierarchical::barrier(h);
    }

    // Aspen's reduce: receivers inside and outside P, and two at once on
    // overlapping sets (streams 1 and 2).
    std::vector<int> P1, R1, P2, R2;
    for (int r = 0; r < n; ++r) {
        P1.push_back(r);
        if (r % 2 == 0) R1.push_back(r);
        if (r >= n / 2) P2.push_back(r);
        if (r < (n + 1) / 2) R2.push_back(r);
    }
    auto in = [&](const std::vector<int>& s) { return std::count(s.begin(), s.end(), me) > 0; };
    auto [g1, g2] = csp::par(
        [&] { return cc::aspen_reduce(c, std::optional<long>(me + 1), P1, R1, cc::sum{}, cc::stream{1}); },
        [&] {
            return cc::aspen_reduce(c, in(P2) ? std::optional<long>(me + 1) : std::nullopt, P2, R2, cc::maximum{},
                                    cc::stream{2});
        });
    expect(g1.has_value() == in(R1) && (!g1 || *g1 == long(n) * (n + 1) / 2), "aspen reduce sum to even ranks");
    expect(g2.has_value() == in(R2) && (!g2 || *g2 == n), "aspen reduce max of the upper half to the lower half");
    return wrong;
}

}  // namespace grid
