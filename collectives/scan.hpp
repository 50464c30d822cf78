#pragma once
// Scan: rank i gets v0 op ... op vi (inclusive) or v0 op ... op v(i-1)
// (exclusive; rank 0 gets nothing).
//
//   recursive_doubling  in round k rank i sends what it has folded so far
//                       (ranks (i - 2^k, i]) to i + 2^k and receives from
//                       i - 2^k, which it folds in front. Keeps rank order.
//                       ceil(log2 n) rounds, at most n-2^k messages each.
//   linear              a chain: rank i receives the prefix from i-1, folds
//                       and passes it to i+1. n-1 messages, n-1 rounds;
//                       for small groups.
#include <optional>
#include <utility>

#include "collectives/algorithm.hpp"
#include "collectives/communicator.hpp"
#include "collectives/operation.hpp"

namespace csp::collectives {

namespace detail {

// Returns {inclusive, exclusive} prefixes of this rank.
template <class C, class T, class Op>
std::pair<T, std::optional<T>> scan_doubling(C& comm, T value, const Op& op, tag t) {
    const int r = comm.rank(), n = comm.size();
    T partial = value;             // ranks (r - 2^k, r] folded
    std::optional<T> before;       // ranks [0, r) folded, as far as seen
    for (int dist = 1, step = 0; dist < n; dist <<= 1, ++step) {
        const tag st = t.step(static_cast<std::uint8_t>(step));
        if (r + dist < n) comm.send(r + dist, st, partial);
        if (r - dist >= 0) {
            // lower op partial and lower op before, folded in place where the
            // op can (operation.hpp: no new vector per round).
            T lower = comm.template receive<T>(r - dist, st);
            combine_into(op, partial, std::as_const(lower), true);
            if (before) combine_into(op, *before, std::as_const(lower), true);
            else before = std::move(lower);
        }
    }
    return {std::move(partial), std::move(before)};
}

template <class C, class T, class Op>
std::pair<T, std::optional<T>> scan_chain(C& comm, T value, const Op& op, tag t) {
    std::optional<T> before;
    if (comm.rank() > 0) before = comm.template receive<T>(comm.rank() - 1, t);
    if (before) combine_into(op, value, std::as_const(*before), true);  // before op value
    T inclusive = std::move(value);
    if (comm.rank() + 1 < comm.size()) comm.send(comm.rank() + 1, t, inclusive);
    return {std::move(inclusive), std::move(before)};
}

}  // namespace detail

struct scan_recursive_doubling_fn {
    static constexpr algorithm_info info{"scan", "recursive_doubling"};

    template <class C, class T, class Op>
    T operator()(C& comm, T value, const Op& op, stream s = {}) const {
        const tag t = comm.next_tag(s);
        detail::announce(comm, info, t);
        return detail::scan_doubling(comm, std::move(value), op, t).first;
    }
};
inline constexpr scan_recursive_doubling_fn scan_recursive_doubling{};
struct scan_pipeline_fn {
    static constexpr algorithm_info info{"scan", "pipeline"};

    template <class C, class T, class Op>
    T operator()(C& comm, T value, const Op& op, stream s = {}) const {
        const tag t = comm.next_tag(s);
        detail::announce(comm, info, t);
        return detail::scan_chain(comm, std::move(value), op, t).first;
    }
};
inline constexpr scan_pipeline_fn scan_pipeline{};
struct exscan_recursive_doubling_fn {
    static constexpr algorithm_info info{"exscan", "recursive_doubling"};

    template <class C, class T, class Op>
    std::optional<T> operator()(C& comm, T value, const Op& op, stream s = {}) const {
        const tag t = comm.next_tag(s);
        detail::announce(comm, info, t);
        return detail::scan_doubling(comm, std::move(value), op, t).second;
    }
};
inline constexpr exscan_recursive_doubling_fn exscan_recursive_doubling{};
struct exscan_pipeline_fn {
    static constexpr algorithm_info info{"exscan", "pipeline"};

    template <class C, class T, class Op>
    std::optional<T> operator()(C& comm, T value, const Op& op, stream s = {}) const {
        const tag t = comm.next_tag(s);
        detail::announce(comm, info, t);
        return detail::scan_chain(comm, std::move(value), op, t).second;
    }
};
inline constexpr exscan_pipeline_fn exscan_pipeline{};

}  // namespace csp::collectives
