#pragma once
// The values and ops the algorithm grid runs with, and the sequential
// references they are checked against. Shared by the local and the network
// grids.
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
