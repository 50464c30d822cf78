#pragma once
// Scan: rank i gets v0 op ... op vi (inclusive) or v0 op ... op v(i-1)
// (exclusive; rank 0 gets nothing).
//
//   recursive_doubling  in round k rank i sends what it has folded so far
//                       (ranks (i - 2^k, i]) to i + 2^k and receives from
//                       i - 2^k, which it folds in front. Keeps rank order.
//                       ceil(log2 n) rounds, at most n-2^k messages each.
//   pipeline            a chain: rank i receives the prefix from i-1, folds
//                       and passes it to i+1. n-1 messages, n-1 rounds;
//                       for small groups.
//   host_memory         OS processes of one host (host_board.hpp): one
//                       meeting on the host board, where every rank copies
//                       its value into its part and rank i folds parts 0..i
//                       (0..i-1) in rank order; a vector over a part goes
//                       through the large board in chunks, one meeting per
//                       chunk (ops that fold in place). No message; rank i
//                       reads i values. Without a board: recursive_doubling.
#include <algorithm>
#include <optional>
#include <span>
#include <utility>

#include "collectives/algorithm.hpp"
#include "collectives/communicator.hpp"
#include "collectives/detail/host_meeting.hpp"
#include "collectives/host_board.hpp"
#include "collectives/operation.hpp"
#include "collectives/receive_view.hpp"
#include "collectives/revocation.hpp"

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

// The chain: rank i receives the prefix of ranks [0, i) from i - 1, folds
// its value behind it and passes the result on; returns the inclusive
// prefix, or the exclusive one if `Exclusive`. The inclusive scan folds the
// prefix where its message arrived (combine_received: no vector for it on
// the net and hybrid communicators, one allocation less per hop); exscan
// returns the prefix, so it receives it whole.
template <bool Exclusive, class C, class T, class Op>
auto scan_chain(C& comm, T value, const Op& op, tag t) {
    const int r = comm.rank();
    std::optional<T> before;
    if (r > 0) {
        if constexpr (Exclusive) {
            before = comm.template receive<T>(r - 1, t);
            combine_into(op, value, std::as_const(*before), true);  // before op value
        } else {
            combine_received(comm, r - 1, t, op, value, true);
        }
    }
    if (r + 1 < comm.size()) comm.send(r + 1, t, value);
    if constexpr (Exclusive) return before;
    else return value;
}

// The exclusive prefix of this rank (nothing at rank 0) from the host
// board, or nothing at all, at every rank alike, where there is no board or
// a value over a part cannot pass the large board: the caller passes
// messages then. Every rank copies its value in (the last one's is read by
// nobody but the type and length checks), and rank i folds parts 0..i-1 in
// rank order where they are (an op that folds in place copies no part out
// first). A vector over a part goes in chunks of a large part, one meeting
// each: chunk j of parts 0..i-1 is folded after meeting j completed and
// before the rank arrives at the next one, after which it writes its part
// again (host_board.hpp's invariants). Splitting the folding evenly (rank i
// folding block i over all ranks, a second meeting handing the prefixes
// out) was measured no faster: 84-140 against 87-89 us at 8 ranks and
// 64 KiB, the second meeting costing what the balance saved.
template <class C, class T, class Op>
std::optional<std::optional<T>> exclusive_on_host(C& comm, const T& value, const Op& op, stream s,
                                                  const algorithm_info& info) {
    if constexpr (host_board_value<T> && requires(tag t) { comm.board_on_host(s, t); }) {
        const auto meeting =
            meet_on_host(comm, s, info, host_board::type_of<T>(), bytes_of(value), {.op = op_id<Op>()});
        if (!meeting) return std::nullopt;
        const auto [board, m] = *meeting;
        const int me = comm.rank();
        if (all_fit<T>(*board, m, me, info)) {
            std::optional<T> before;
            for (int q = 0; q < me; ++q) {
                const auto p = board->part_of(m, q);
                if (!before) {
                    before = value_from_part<T>(p);
                } else if constexpr (folds_in_place<Op, T>) {
                    op.fold_into(*before, reinterpret_cast<const typename T::value_type*>(p.data));
                } else {
                    combine_into(op, *before, value_from_part<T>(p), false);
                }
            }
            return before;
        }
        if constexpr (folds_in_place<Op, T>) {
            const tag u = comm.next_tag(s);
            if (host_board* large = comm.large_board_on_host(s, u)) {
                using E = typename T::value_type;
                const std::size_t length = value.size(), per_chunk = large->capacity() / sizeof(E);
                std::optional<T> before;
                if (me > 0) before.emplace(length);
                for (std::size_t first = 0; first < length; first += per_chunk) {
                    const std::size_t count = std::min(per_chunk, length - first);
                    if (me + 1 < comm.size())
                        std::copy(value.data() + first, value.data() + first + count,
                                  reinterpret_cast<E*>(large->own_part(large->meetings() + 1)));
                    const std::uint64_t mc = large->arrive(host_board::type_of<T>(), {});
                    large->wait(comm, u, mc);
                    if (!before) continue;
                    auto chunk_of = [&](int q) { return reinterpret_cast<const E*>(large->part_of(mc, q).data); };
                    std::span<E> acc(before->data() + first, count);
                    std::copy(chunk_of(0), chunk_of(0) + count, acc.begin());
                    for (int q = 1; q < me; ++q) op.fold_into(acc, chunk_of(q));
                }
                return before;
            }
        }
    }
    return std::nullopt;
}

}  // namespace detail

struct scan_recursive_doubling_fn {
    static constexpr algorithm_info info{.collective = "scan", .name = "recursive_doubling", .code = 1};

    template <class C, class T, class Op>
    T operator()(C& comm, T value, const Op& op, stream s = {}) const {
        const tag t = detail::begin_call(comm, info, s);
        return detail::scan_doubling(comm, std::move(value), op, t).first;
    }
};
inline constexpr guarded_algorithm<scan_recursive_doubling_fn> scan_recursive_doubling{};
struct scan_pipeline_fn {
    static constexpr algorithm_info info{.collective = "scan", .name = "pipeline", .code = 2};

    template <class C, class T, class Op>
    T operator()(C& comm, T value, const Op& op, stream s = {}) const {
        const tag t = detail::begin_call(comm, info, s);
        return detail::scan_chain<false>(comm, std::move(value), op, t);
    }
};
inline constexpr guarded_algorithm<scan_pipeline_fn> scan_pipeline{};
struct exscan_recursive_doubling_fn {
    static constexpr algorithm_info info{.collective = "exscan", .name = "recursive_doubling", .code = 1};

    template <class C, class T, class Op>
    std::optional<T> operator()(C& comm, T value, const Op& op, stream s = {}) const {
        const tag t = detail::begin_call(comm, info, s);
        return detail::scan_doubling(comm, std::move(value), op, t).second;
    }
};
inline constexpr guarded_algorithm<exscan_recursive_doubling_fn> exscan_recursive_doubling{};
struct exscan_pipeline_fn {
    static constexpr algorithm_info info{.collective = "exscan", .name = "pipeline", .code = 2};

    template <class C, class T, class Op>
    std::optional<T> operator()(C& comm, T value, const Op& op, stream s = {}) const {
        const tag t = detail::begin_call(comm, info, s);
        return detail::scan_chain<true>(comm, std::move(value), op, t);
    }
};
inline constexpr guarded_algorithm<exscan_pipeline_fn> exscan_pipeline{};

struct scan_host_memory_fn {
    static constexpr algorithm_info info{
        .collective = "scan", .name = "host_memory", .code = 3, .needs_host_level = true};

    template <class C, class T, class Op>
    T operator()(C& comm, T value, const Op& op, stream s = {}) const {
        if (auto before = detail::exclusive_on_host(comm, value, op, s, info)) {
            if (!*before) return value;
            detail::combine_into(op, **before, std::as_const(value), false);  // before op value
            return std::move(**before);
        }
        return scan_recursive_doubling_fn{}(comm, std::move(value), op, s);
    }
};
inline constexpr guarded_algorithm<scan_host_memory_fn> scan_host_memory{};
struct exscan_host_memory_fn {
    static constexpr algorithm_info info{
        .collective = "exscan", .name = "host_memory", .code = 3, .needs_host_level = true};

    template <class C, class T, class Op>
    std::optional<T> operator()(C& comm, T value, const Op& op, stream s = {}) const {
        if (auto before = detail::exclusive_on_host(comm, value, op, s, info)) return std::move(*before);
        return exscan_recursive_doubling_fn{}(comm, std::move(value), op, s);
    }
};
inline constexpr guarded_algorithm<exscan_host_memory_fn> exscan_host_memory{};

}  // namespace csp::collectives
