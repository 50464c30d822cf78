#pragma once
// The values and ops the algorithm grid runs with, and the sequential
// references they are checked against. Shared by the local and the network
// grids.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/collectives.hpp"

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
inline const auto concat = cc::ordered([](const std::string& x, const std::string& y) { return x + y; });

inline std::vector<std::int64_t> numbers_of(int r, std::size_t len) {
    std::vector<std::int64_t> v(len);
    for (std::size_t i = 0; i < len; ++i) v[i] = (r * 7919 + static_cast<std::int64_t>(i) * 104729) % 1000 - 500;
    return v;
}
inline std::string text_of(int r, std::size_t len) { return std::string(len, static_cast<char>('a' + r % 26)); }

// v(lo) op ... op v(hi - 1), or nothing for an empty range.
template <class F, class Op>
auto fold(int lo, int hi, F value_of, const Op& op) -> std::optional<decltype(value_of(0))> {
    std::optional<decltype(value_of(0))> acc;
    for (int r = lo; r < hi; ++r) acc = acc ? op(*acc, value_of(r)) : value_of(r);
    return acc;
}

inline constexpr std::string_view reduce_algorithms[] = {"linear", "binomial", "binomial_parallel", "chain",
                                                         "arrival"};

template <class C, class T, class Op>
std::optional<T> reduce_by(std::string_view a, C& c, T v, const Op& op, int root) {
    if (a == "linear") return cc::reduce_linear(c, std::move(v), op, root);
    if (a == "binomial") return cc::reduce_binomial(c, std::move(v), op, root);
    if (a == "binomial_parallel") return cc::reduce_binomial_parallel(c, std::move(v), op, root);
    if (a == "chain") return cc::reduce_chain(c, std::move(v), op, root);
    return cc::reduce_arrival(c, std::move(v), op, root);
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
            expect(cc::broadcast_linear(c, mine, root) == numbers(root), "broadcast linear" + at + sz);
            expect(cc::broadcast_binomial(c, mine, root) == numbers(root), "broadcast binomial" + at + sz);
            for (auto a : reduce_algorithms) {
                const std::string what = "reduce " + std::string(a) + at + sz;
                expect_at_root(reduce_by(a, c, numbers(me), cc::sum{}, root), fold(0, n, numbers, cc::sum{}), root,
                               what + " sum");
                expect_at_root(reduce_by(a, c, numbers(me), cc::minimum{}, root), fold(0, n, numbers, cc::minimum{}),
                               root, what + " min");
                if (a == "arrival") continue;
                expect_at_root(reduce_by(a, c, text(me), concat, root), fold(0, n, text, concat), root,
                               what + " concat");
            }
        }
        for (auto a : reduce_algorithms)
            if (a != "arrival")
                expect_at_root(reduce_by(a, c, mat_of(me), mat_product, root), fold(0, n, mat_of, mat_product), root,
                               "reduce " + std::string(a) + at + " matrices");

        std::vector<std::string> all;
        for (int r = 0; r < n; ++r) all.push_back(text_of(r, static_cast<std::size_t>(r % 3)));
        const auto& own = all[static_cast<std::size_t>(me)];
        expect_at_root(cc::gather_sequential(c, own, root), std::optional(all), root, "gather sequential" + at);
        expect_at_root(cc::gather_parallel(c, own, root), std::optional(all), root, "gather parallel" + at);
        auto input = me == root ? all : std::vector<std::string>{};
        expect(cc::scatter_sequential(c, input, root) == own, "scatter sequential" + at);
        expect(cc::scatter_parallel(c, input, root) == own, "scatter parallel" + at);
    }

    for (std::size_t len : {0u, 1u, 17u}) {
        auto numbers = [len](int r) { return numbers_of(r, len); };
        auto text = [len](int r) { return text_of(r, len); };
        const std::string sz = " len " + std::to_string(len);
        expect(cc::allreduce_butterfly(c, numbers(me), cc::sum{}) == *fold(0, n, numbers, cc::sum{}),
               "allreduce butterfly sum" + sz);
        expect(cc::allreduce_reduce_broadcast(c, numbers(me), cc::maximum{}) == *fold(0, n, numbers, cc::maximum{}),
               "allreduce reduce_broadcast max" + sz);
        expect(cc::allreduce_butterfly(c, text(me), concat) == *fold(0, n, text, concat),
               "allreduce butterfly concat" + sz);
    }
    expect(cc::allreduce_butterfly(c, mat_of(me), mat_product) == *fold(0, n, mat_of, mat_product),
           "allreduce butterfly matrices");

    cc::barrier_sequential(c);
    cc::barrier_linear(c);
    cc::barrier_binomial(c);

    std::vector<std::string> everyone;
    for (int r = 0; r < n; ++r) everyone.push_back(text_of(r, 2));
    expect(cc::allgather_gather_broadcast(c, text_of(me, 2)) == everyone, "allgather");
    std::vector<int> out, want;
    for (int j = 0; j < n; ++j) out.push_back(me * 100 + j), want.push_back(j * 100 + me);
    expect(cc::alltoall_parallel(c, out) == want, "alltoall");
    auto letter = [](int r) { return std::string(1, static_cast<char>('a' + r)); };
    expect(cc::scan_recursive_doubling(c, letter(me), concat) == *fold(0, me + 1, letter, concat), "scan doubling");
    expect(cc::scan_linear(c, letter(me), concat) == *fold(0, me + 1, letter, concat), "scan linear");
    expect(cc::exscan_recursive_doubling(c, letter(me), concat) == fold(0, me, letter, concat), "exscan doubling");
    expect(cc::exscan_linear(c, letter(me), concat) == fold(0, me, letter, concat), "exscan linear");

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
