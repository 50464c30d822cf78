#pragma once
// Reduce-scatter: every rank passes a vector of the same length; the
// element-wise fold of all of them, v0 op v1 op ... op v(n-1), is cut into
// blocks, and rank i gets block i. `counts[i]` is the length of block i
// (irregular); every rank passes the same counts, and they add up to the
// vectors' length. reduce_scatter_block (dispatch.hpp) is the case of equal
// blocks. The op is applied to whole blocks, so it must act element by
// element (the built-in ops do).
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
#include <cstddef>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "collectives/algorithm.hpp"
#include "collectives/communicator.hpp"
#include "collectives/receive_view.hpp"
#include "collectives/reduce.hpp"
#include "collectives/scatter.hpp"

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
    return V(v.begin() + static_cast<std::ptrdiff_t>(offsets[i]), v.begin() + static_cast<std::ptrdiff_t>(offsets[i + 1]));
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
    static constexpr algorithm_info info{"reduce_scatter", "reduce_then_scatter"};

    template <class C, class V, class Op>
    V operator()(C& comm, V values, const std::vector<std::size_t>& counts, const Op& op, stream s = {}) const {
        const auto offsets = detail::block_offsets(counts, values.size(), comm.size());
        const tag t = comm.next_tag(s);
        detail::announce(comm, info, t);
        auto whole = reduce_binomial(comm, std::move(values), op, 0, s);
        std::vector<V> blocks;
        if (whole)
            for (int b = 0; b < comm.size(); ++b) blocks.push_back(detail::block_of(*whole, offsets, b));
        return scatter_parallel(comm, std::move(blocks), 0, s);
    }
};
inline constexpr reduce_scatter_reduce_then_scatter_fn reduce_scatter_reduce_then_scatter{};

struct reduce_scatter_ring_fn {
    static constexpr algorithm_info info{"reduce_scatter", "ring", true};

    template <class C, class V, class Op>
    V operator()(C& comm, V values, const std::vector<std::size_t>& counts, const Op& op, stream s = {}) const {
        const int n = comm.size(), me = comm.rank();
        const auto offsets = detail::block_offsets(counts, values.size(), n);
        const tag t = comm.next_tag(s);
        detail::announce(comm, info, t);
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
                op.fold_into(running, values.begin() + static_cast<std::ptrdiff_t>(offsets[static_cast<std::size_t>(b)]));
            else
                running = op(running, detail::block_of(values, offsets, b));
        }
        return running;  // block(n - 1) == me
    }
};
inline constexpr reduce_scatter_ring_fn reduce_scatter_ring{};

}  // namespace csp::collectives
