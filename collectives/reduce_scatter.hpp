#pragma once
// Reduce-scatter: every rank passes a vector of the same length; the
// element-wise fold of all of them, v0 op v1 op ... op v(n-1), is cut into
// blocks, and rank i gets block i. `counts[i]` is the length of block i
// (irregular); every rank passes the same counts, and they add up to the
// vectors' length. Counts that differ between ranks fail the call (on a
// board at every rank; passing messages at least at each rank whose block
// would have another length than its counts name). reduce_scatter_block
// (dispatch.hpp) is the case of equal blocks. The op is applied to whole
// blocks, so it must act element by element (the built-in ops do).
//
//   reduce_then_scatter  a binomial reduce of the whole vector to rank 0,
//                        then rank 0 sends block i to rank i. Any op: rank
//                        order is kept. 2(n-1) messages; rank 0 folds and
//                        sends everything.
//   ring                 commuting ops only. In step k (k = 0..n-2) rank r
//                        sends its running fold of block (r-k-1) mod n to
//                        r+1 and folds its own part into the block that
//                        arrives from r-1; after n-1 steps rank r holds
//                        block r folded over every rank. n(n-1) messages of
//                        one block each: every rank sends and folds about
//                        (n-1)/n of the vector once, the bandwidth-optimal
//                        schedule for large vectors.
//   host_memory          OS processes of one host (a net_communicator whose
//                        ranks share this host's memory, host_board.hpp):
//                        every rank copies its vector into its part of the
//                        host board, and once all have, each folds its own
//                        block of every part, in rank order (any op). A
//                        vector larger than a part goes in slices on a large
//                        board: meeting j carries slice j of every block, so
//                        each meeting gives every rank its share of the
//                        folding (an op that folds in place; others, and
//                        ranks without a board, take reduce_then_scatter).
#include <cstddef>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "collectives/algorithm.hpp"
#include "collectives/communicator.hpp"
#include "collectives/detail/host_meeting.hpp"
#include "collectives/host_board.hpp"
#include "collectives/receive_view.hpp"
#include "collectives/reduce.hpp"
#include "collectives/scatter.hpp"
#include "collectives/revocation.hpp"

namespace csp::collectives {

namespace detail {

// `length` elements in `parts` blocks as even as can be, the first
// length % parts one element longer.
inline std::vector<std::size_t> even_counts(std::size_t length, std::size_t parts) {
    std::vector<std::size_t> counts(parts, length / parts);
    for (std::size_t i = 0; i < length % parts; ++i) ++counts[i];
    return counts;
}

// Where each block starts; usage_error unless the counts fit the group and
// the vector.
inline std::vector<std::size_t> block_offsets(const std::vector<std::size_t>& counts, std::size_t length, int size) {
    if (counts.size() != static_cast<std::size_t>(size))
        throw usage_error("reduce_scatter: " + std::to_string(counts.size()) + " block counts for " +
                          std::to_string(size) + " ranks");
    std::vector<std::size_t> offsets(counts.size() + 1, 0);
    std::partial_sum(counts.begin(), counts.end(), offsets.begin() + 1);
    if (offsets.back() != length)
        throw usage_error("reduce_scatter: the block counts add up to " + std::to_string(offsets.back()) +
                          " elements, the vector holds " + std::to_string(length));
    return offsets;
}

template <class V>
V block_of(const V& v, const std::vector<std::size_t>& offsets, int b) {
    const auto i = static_cast<std::size_t>(b);
    return V(v.begin() + static_cast<std::ptrdiff_t>(offsets[i]),
             v.begin() + static_cast<std::ptrdiff_t>(offsets[i + 1]));
}

[[noreturn]] inline void wrong_block_length(int from, std::size_t block, std::size_t got, std::size_t due) {
    throw usage_error("reduce_scatter: rank " + std::to_string(from) + " sent block " + std::to_string(block) +
                      " with " + std::to_string(got) + " elements, not " + std::to_string(due) +
                      "; do all ranks pass the same counts?");
}

// The ring reduce_scatter (below) run inside `values`: what arrives from
// r-1 is folded into this rank's own copy of that block, from where it
// arrived, and that block is what goes on to r+1, as a span. A hop copies
// each element once, into the message it sends, and allocates nothing
// else; the copying path moves its running block into the message (no
// copy) but decodes each arrival into a new vector. Needs a communicator
// that views received messages in place and an op that folds in place
// (the built-in ones). Afterwards block `rank` of `values` is folded over
// every rank; the other blocks hold partial folds.
//
// The blocks it sends are lent through `book` (receive_view.hpp's
// send_part): none is written again by this function, and the caller
// settles before it writes one or lets `values` go.
template <class C, class V, class Op>
void reduce_scatter_ring_in_place(C& comm, V& values, const std::vector<std::size_t>& offsets, const Op& op, tag t,
                                  net::loans& book) {
    using E = typename V::value_type;
    const int n = comm.size(), me = comm.rank();
    if (n == 1) return;
    const int next = (me + 1) % n, prev = (me + n - 1) % n;
    auto block = [&](int k) { return static_cast<std::size_t>(((me - k - 1) % n + n) % n); };
    auto part = [&](std::size_t b) { return std::span<E>(values.data() + offsets[b], offsets[b + 1] - offsets[b]); };
    auto send_block = [&](std::size_t b) { send_part(comm, next, t, values, offsets[b], offsets[b + 1], book); };
    send_block(block(0));
    for (int k = 0; k < n - 1; ++k) {
        const std::size_t b = block(k + 1);
        receive_view<E>(comm, prev, t, [&](std::span<const E> got) {
            auto mine = part(b);
            if (got.size() != mine.size()) wrong_block_length(prev, b, got.size(), mine.size());
            op.fold_before(mine, got.begin());  // the running fold first, as the copying path
        });
        if (k < n - 2) send_block(b);
    }
}

}  // namespace detail

struct reduce_scatter_reduce_then_scatter_fn {
    static constexpr algorithm_info info{.collective = "reduce_scatter", .name = "reduce_then_scatter", .code = 1};

    template <class C, class V, class Op>
    V operator()(C& comm, V values, const std::vector<std::size_t>& counts, const Op& op, stream s = {}) const {
        const auto offsets = detail::block_offsets(counts, values.size(), comm.size());
        detail::begin_call(comm, info, s);  // the steps below draw their own tags
        auto whole = reduce_binomial_fn{}(comm, std::move(values), op, 0, s);
        std::vector<V> blocks;
        if (whole)
            for (int b = 0; b < comm.size(); ++b) blocks.push_back(detail::block_of(*whole, offsets, b));
        // The root cut the fold by its counts: a rank whose own count of its
        // block differs has passed other counts (the others' blocks are
        // right by theirs), and is told so here.
        V mine = scatter_parallel_fn{}(comm, std::move(blocks), 0, s);
        const std::size_t due = counts[static_cast<std::size_t>(comm.rank())];
        if (mine.size() != due) detail::wrong_block_length(0, static_cast<std::size_t>(comm.rank()), mine.size(), due);
        return mine;
    }
};
inline constexpr guarded_algorithm<reduce_scatter_reduce_then_scatter_fn> reduce_scatter_reduce_then_scatter{};

struct reduce_scatter_ring_fn {
    static constexpr algorithm_info info{
        .collective = "reduce_scatter", .name = "ring", .code = 2, .needs_commuting_op = true};

    template <class C, class V, class Op>
    V operator()(C& comm, V values, const std::vector<std::size_t>& counts, const Op& op, stream s = {}) const {
        const int n = comm.size(), me = comm.rank();
        const auto offsets = detail::block_offsets(counts, values.size(), n);
        const tag t = detail::begin_call(comm, info, s);
        if (n == 1) return values;
        if constexpr (detail::folds_from_messages<C, V, Op>) {
            net::loans book;
            detail::reduce_scatter_ring_in_place(comm, values, offsets, op, t, book);
            book.settle();
            return detail::block_of(values, offsets, me);
        }
        const int next = (me + 1) % n, prev = (me + n - 1) % n;
        auto block = [&](int k) { return ((me - k - 1) % n + n) % n; };
        // One tag for every step: the messages of one sender with one tag
        // arrive in the order sent, and each rank hears only from prev.
        // The built-in ops fold my part into the block that arrived, in
        // place; another op makes a new block at each step.
        V running = detail::block_of(values, offsets, block(0));
        for (int k = 0; k < n - 1; ++k) {
            comm.send(next, t, std::move(running));
            running = comm.template receive<V>(prev, t);
            const int b = block(k + 1);
            if (running.size() != counts[static_cast<std::size_t>(b)])
                detail::wrong_block_length(prev, static_cast<std::size_t>(b), running.size(),
                                           counts[static_cast<std::size_t>(b)]);
            if constexpr (requires { op.fold_into(running, values.begin()); })
                op.fold_into(running,
                             values.begin() + static_cast<std::ptrdiff_t>(offsets[static_cast<std::size_t>(b)]));
            else
                running = op(running, detail::block_of(values, offsets, b));
        }
        return running;  // block(n - 1) == me
    }
};
inline constexpr guarded_algorithm<reduce_scatter_ring_fn> reduce_scatter_ring{};

struct reduce_scatter_host_memory_fn {
    static constexpr algorithm_info info{
        .collective = "reduce_scatter", .name = "host_memory", .code = 3, .needs_host_level = true};

    template <class C, class V, class Op>
    V operator()(C& comm, V values, const std::vector<std::size_t>& counts, const Op& op, stream s = {}) const {
        if constexpr (detail::element_vector<V> && requires(tag t) { comm.board_on_host(s, t); }) {
            const auto offsets = detail::block_offsets(counts, values.size(), comm.size());
            if (const auto meeting =
                    detail::meet_on_host(comm, s, info, host_board::type_of<V>(), detail::bytes_of(values),
                                         {.op = detail::op_id<Op>(), .blocks = detail::blocks_id(counts)})) {
                const auto [board, m] = *meeting;
                if (detail::all_fit<V>(*board, m, comm.rank(), info))
                    return fold_block<V>(*board, m, offsets, comm.rank(), op);
                // Some rank's vector did not fit its part: all ranks saw it,
                // and that all vectors have one length.
                if constexpr (detail::folds_in_place<Op, V> &&
                              requires(tag u) { comm.large_board_on_host(s, u); }) {
                    const tag u = comm.next_tag(s);
                    if (host_board* large = comm.large_board_on_host(s, u))
                        if (auto out = in_slices(comm, *large, u, values, offsets, op)) return std::move(*out);
                }
            }
        }
        return reduce_scatter_reduce_then_scatter_fn{}(comm, std::move(values), counts, op, s);
    }

private:
    // Block `me` of every part of meeting m, folded in rank order.
    template <class V, class Op>
    static V fold_block(const host_board& board, std::uint64_t m, const std::vector<std::size_t>& offsets, int me,
                        const Op& op) {
        using E = typename V::value_type;
        const std::size_t lo = offsets[static_cast<std::size_t>(me)], hi = offsets[static_cast<std::size_t>(me) + 1];
        auto block_of = [&](int q) { return reinterpret_cast<const E*>(board.part_of(m, q).data) + lo; };
        V acc(block_of(0), block_of(0) + (hi - lo));
        for (int q = 1; q < board.size(); ++q) {
            if constexpr (detail::folds_in_place<Op, V>) op.fold_into(acc, block_of(q));
            else detail::combine_into(op, acc, V(block_of(q), block_of(q) + (hi - lo)), false);
        }
        return acc;
    }

    // A vector larger than a part, on a large board (host_board::large_shape)
    // in k slices per block: slice j of block b is its elements
    // [counts[b] j / k, counts[b] (j + 1) / k), and meeting j carries slice
    // j of every block, laid out in block order, in each rank's part. Rank
    // `me` folds slice j of its block, in rank order, straight into its
    // result (its own contribution from its vector: it never copies its own
    // block in), while the board passes slice j + 1: one meeting per slice.
    // The parts of meeting m are read before the rank arrives at m + 1 (the
    // last slice's too, before its next meeting on this board), and a rank
    // writes its part of meeting m + 1 after m completed, as allreduce's
    // in_blocks does, so no set is rewritten while read (host_board.hpp's
    // invariants). Nothing (every rank alike) when the parts are too small
    // to hold a slice of every block: the caller passes messages then.
    template <class C, class V, class Op>
    static std::optional<V> in_slices(C& comm, host_board& board, tag t, const V& values,
                                      const std::vector<std::size_t>& offsets, const Op& op) {
        using E = typename V::value_type;
        const std::size_t n = static_cast<std::size_t>(board.size()), me = static_cast<std::size_t>(comm.rank());
        const std::size_t length = values.size(), most = board.capacity() / sizeof(E);
        // A slice of each block is at most ceil(count / k) long: k slices of
        // at most length / k + n elements a meeting fit a part.
        if (most <= n) return std::nullopt;
        const std::size_t k = std::max<std::size_t>(1, (length + (most - n) - 1) / (most - n));
        auto count = [&](std::size_t b) { return offsets[b + 1] - offsets[b]; };
        auto slice = [&](std::size_t b, std::size_t j) { return std::pair(count(b) * j / k, count(b) * (j + 1) / k); };
        // Where slice j of block b starts in a part of meeting j.
        std::vector<std::size_t> at(n);
        auto lay_out = [&](std::size_t j) {
            std::size_t next = 0;
            for (std::size_t b = 0; b < n; ++b) {
                at[b] = next;
                const auto [lo, hi] = slice(b, j);
                next += hi - lo;
            }
        };
        V out(count(me));
        std::uint64_t last = 0;  // the meeting of slice j - 1
        for (std::size_t j = 0; j <= k; ++j) {
            if (j > 0) {
                lay_out(j - 1);
                const auto [lo, hi] = slice(me, j - 1);
                const E* const own = values.data() + offsets[me] + lo;
                auto from = [&](std::size_t q) -> const E* {
                    return q == me ? own
                                   : reinterpret_cast<const E*>(board.part_of(last, static_cast<int>(q)).data) + at[me];
                };
                std::span<E> acc(out.data() + lo, hi - lo);
                std::copy(from(0), from(0) + acc.size(), acc.begin());
                for (std::size_t q = 1; q < n; ++q) op.fold_into(acc, from(q));
            }
            if (j == k) break;  // read before any rank can write this set again: no meeting needed
            lay_out(j);
            E* const into = reinterpret_cast<E*>(board.own_part(board.meetings() + 1));
            for (std::size_t b = 0; b < n; ++b) {
                if (b == me) continue;
                const auto [lo, hi] = slice(b, j);
                std::copy(values.data() + offsets[b] + lo, values.data() + offsets[b] + hi, into + at[b]);
            }
            const std::uint64_t m = board.arrive(host_board::type_of<V>(), {});
            board.wait(comm, t, m);
            last = m;
        }
        return out;
    }
};
inline constexpr guarded_algorithm<reduce_scatter_host_memory_fn> reduce_scatter_host_memory{};

}  // namespace csp::collectives
