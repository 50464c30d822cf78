#pragma once
// Reduction operations: an associative callable and whether it commutes.
//
//   csp::collectives::sum{}                               // + ; commutes
//   csp::collectives::commuting([](int a, int b) { return a ^ b; })
//   csp::collectives::ordered([](mat a, mat b) { return a * b; })   // never reordered
//
// Every algorithm combines as op(lower ranks' part, higher ranks' part), so
// an associative op that does not commute gets v0 op v1 op ... op v(n-1) in
// rank order. Only an op that says it commutes may be applied in another
// order (arrival order, Aspen's renumbering). A bare callable is taken as not
// commuting, and as not acting element by element (the ring algorithms cut
// vectors into blocks and need one that does: the built-in ones, or any op
// with `static constexpr bool elementwise = true`). The built-in ops work on numbers and, element by element, on
// vectors of numbers (which must have equal lengths).
#include <algorithm>
#include <concepts>
#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

#include "csp/error.hpp"

namespace csp::collectives {

template <class F>
struct operation {
    F combine;
    bool commutes = false;

    template <class T>
    T operator()(const T& a, const T& b) const { return combine(a, b); }
};

template <class F>
operation<std::decay_t<F>> commuting(F&& f) { return {std::forward<F>(f), true}; }
template <class F>
operation<std::decay_t<F>> ordered(F&& f) { return {std::forward<F>(f), false}; }

namespace detail {

template <class T> struct is_vector : std::false_type {};
template <class U, class A> struct is_vector<std::vector<U, A>> : std::true_type {};

// Element-wise folds take vectors of one length only. (Error: what a fold
// that every rank makes alike throws, revocation.hpp's agreed_error.)
template <class Error = usage_error>
void check_same_length(std::size_t a, std::size_t b) {
    if (a != b)
        throw Error("reduction over vectors of different lengths (" + std::to_string(a) + " and " +
                          std::to_string(b) + ")");
}

// Applies a binary function on numbers to a pair of numbers or, element by
// element, to a pair of vectors.
template <class F, class T>
T elementwise(const T& a, const T& b, F f) {
    if constexpr (is_vector<T>::value) {
        check_same_length(a.size(), b.size());
        T out(a.size());
        for (std::size_t i = 0; i < a.size(); ++i) out[i] = f(a[i], b[i]);
        return out;
    } else {
        return f(a, b);
    }
}

template <class T> struct element { using type = T; };
template <class U, class A> struct element<std::vector<U, A>> { using type = U; };

template <class F>
struct builtin {
    static constexpr bool commutes = true;
    static constexpr bool elementwise = true;
    template <class T>
        requires std::invocable<F, typename element<T>::type, typename element<T>::type>
    T operator()(const T& a, const T& b) const { return detail::elementwise(a, b, F{}); }

    // acc[i] = acc[i] op b[i] for every element of acc, in place: what the
    // ring algorithms fold with, so that no hop allocates.
    template <class V, class It>
    void fold_into(V& acc, It b) const {
        for (std::size_t i = 0; i < acc.size(); ++i, ++b) acc[i] = F{}(acc[i], static_cast<typename V::value_type>(*b));
    }
    // acc[i] = b[i] op acc[i]: the same with b's part first (min and max
    // tell -0.0 from 0.0 by their order).
    template <class V, class It>
    void fold_before(V& acc, It b) const {
        for (std::size_t i = 0; i < acc.size(); ++i, ++b) acc[i] = F{}(static_cast<typename V::value_type>(*b), acc[i]);
    }
};

struct plus_fn { template <class U> U operator()(U a, U b) const { return a + b; } };
struct times_fn { template <class U> U operator()(U a, U b) const { return a * b; } };
struct min_fn { template <class U> U operator()(U a, U b) const { return std::min(a, b); } };
struct max_fn { template <class U> U operator()(U a, U b) const { return std::max(a, b); } };
struct bit_and_fn { template <std::integral U> U operator()(U a, U b) const { return static_cast<U>(a & b); } };
struct bit_or_fn { template <std::integral U> U operator()(U a, U b) const { return static_cast<U>(a | b); } };
struct bit_xor_fn { template <std::integral U> U operator()(U a, U b) const { return static_cast<U>(a ^ b); } };
struct logical_and_fn { template <std::integral U> U operator()(U a, U b) const { return static_cast<U>(a && b); } };
struct logical_or_fn { template <std::integral U> U operator()(U a, U b) const { return static_cast<U>(a || b); } };

// Whether `op` can fold a vector T into another in place (fold_into).
// (Not vector<bool>, whose elements are proxies the ops do not take.)
template <class Op, class T>
constexpr bool folds_in_place =
    is_vector<T>::value && !std::is_same_v<typename element<T>::type, bool> &&
    requires(const Op& op, T& acc, const T& part) { op.fold_into(acc, part.begin()); };

// acc = part_first ? op(part, acc) : op(acc, part), in place (no
// allocation) for a vector and an op that folds element by element, or for
// an op that combines into its accumulator itself (op.combine_into).
template <class Op, class T>
void combine_into(const Op& op, T& acc, const T& part, bool part_first) {
    if constexpr (folds_in_place<Op, T>) {
        check_same_length(acc.size(), part.size());
        if (part_first) op.fold_before(acc, part.begin());
        else op.fold_into(acc, part.begin());
    } else if constexpr (requires { op.combine_into(acc, part, part_first); }) {
        op.combine_into(acc, part, part_first);
    } else {
        acc = part_first ? op(part, std::as_const(acc)) : op(std::as_const(acc), part);
    }
}

// parts[0] op parts[1] op ... op parts[n-1] into acc (reusing its storage).
template <class Op, class T, class Parts>
void fold_in_rank_order(const Op& op, T& acc, const Parts& parts) {
    acc = parts[0];
    for (std::size_t i = 1; i < parts.size(); ++i) combine_into(op, acc, parts[i], false);
}

}  // namespace detail

struct sum : detail::builtin<detail::plus_fn> {};
struct product : detail::builtin<detail::times_fn> {};
struct minimum : detail::builtin<detail::min_fn> {};
struct maximum : detail::builtin<detail::max_fn> {};
struct bit_and : detail::builtin<detail::bit_and_fn> {};
struct bit_or : detail::builtin<detail::bit_or_fn> {};
struct bit_xor : detail::builtin<detail::bit_xor_fn> {};
struct logical_and : detail::builtin<detail::logical_and_fn> {};
struct logical_or : detail::builtin<detail::logical_or_fn> {};

// Whether `op` applied to two vectors is `op` applied to each pair of
// elements, so that it may be applied to blocks of them.
template <class Op>
constexpr bool acts_elementwise(const Op& op) {
    if constexpr (requires { op.elementwise; }) return static_cast<bool>(op.elementwise);
    else return false;
}

// Whether `op`'s values are the same size at every rank by its contract
// (as an element-wise op's vectors are; a shared-variable group's blocks,
// shared_group.hpp): then the selection table may choose by this rank's
// size alone (dispatch.hpp), with no agreement on sizes first.
template <class Op>
constexpr bool takes_equal_sizes(const Op& op) {
    if constexpr (requires { op.equal_sizes; }) return static_cast<bool>(op.equal_sizes);
    else return acts_elementwise(op);
}

// Whether `op` may be applied out of rank order.
template <class Op>
bool commutes(const Op& op) {
    if constexpr (requires { op.commutes; }) return static_cast<bool>(op.commutes);
    else return false;
}

}  // namespace csp::collectives
