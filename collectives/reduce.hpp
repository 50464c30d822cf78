#pragma once
// Reduce: the root gets v0 op v1 op ... op v(n-1); the others get nothing.
//
// All algorithms keep rank order unless they say otherwise, so an associative
// op that does not commute is fine. The binomial ones run on the tree rooted
// at the root when the op commutes; otherwise on the tree rooted at rank 0
// (whose subtrees hold contiguous rank ranges) followed by one message from
// rank 0 to the root.
//
//   linear            the root receives from every rank in rank order and
//                     folds as it goes (listing 5): one fixed order, so the
//                     same float result on every run. n-1 messages into
//                     the root.
//   binomial          each rank receives from its children one after the
//                     other, nearest first, folds, sends to its parent
//                     (listing 6). n-1 messages, ceil(log2 n) rounds.
//   binomial_parallel as binomial, but the children's values are received
//                     at once, one process each, and folded when all are in
//                     (listing 7): a late child holds up nobody else's
//                     receive.
//   chain             as binomial_parallel, but with a chain of recursive
//                     processes, one per child: each receives its child's
//                     value and folds it with the rest of the chain's
//                     (listing 8), so folding starts before the last value.
//   arrival           commuting ops only: each rank folds its children's
//                     values in the order they arrive.
//   pipeline          vectors, with an op that acts element by element (it
//                     need not commute): a chain, the vector cut into
//                     segments of about 64 KiB. The last rank of the chain
//                     sends its segments to the one before it; each rank
//                     folds every arriving segment into its own (its own on
//                     the left) and passes it on at once, so every rank
//                     folds a different segment at the same time. The chain
//                     is in rank order towards rank 0, or rotated to end at
//                     the root for an op that commutes; rank 0 passes each
//                     segment of the fold on to another root as it is done.
//                     Each rank first tells its neighbour its length, so
//                     vectors of different lengths fail instead of folding
//                     a part. (n-1)(S+1) messages for S segments, n-1+S
//                     segment times: for large vectors, where a tree moves
//                     the whole vector log2 n times in turn.
//   shared_memory     ranks of one address space (shared_board.hpp): each
//                     copies its value into its slot, all sync once, the
//                     root folds the slots in rank order. Elsewhere it runs
//                     binomial_parallel.
//   host_memory       processes of one host (a net_communicator over
//                     shared memory): the host board's allreduce, with
//                     only the root copying the result out. In
//                     allreduce.hpp, beside the allreduce it shares its
//                     steps with.
//
// Over net and hybrid communicators, binomial and binomial_parallel fold a
// std::vector's parts with a built-in op straight from the messages' bytes,
// in the children's order, instead of decoding each into a vector first.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "collectives/algorithm.hpp"
#include "collectives/communicator.hpp"
#include "collectives/detail/peers.hpp"
#include "collectives/operation.hpp"
#include "collectives/receive_view.hpp"
#include "collectives/shared_board.hpp"
#include "collectives/topology.hpp"
#include "collectives/revocation.hpp"
#include "csp/process.hpp"

namespace csp::collectives {

struct reduce_flat_in_order_fn {
    static constexpr algorithm_info info{.collective = "reduce", .name = "flat_in_order", .code = 1};

    template <class C, class T, class Op>
    std::optional<T> operator()(C& comm, T value, const Op& op, int root = 0, stream s = {}) const {
        topology::check(comm.rank(), comm.size(), root);
        const tag t = detail::begin_call(comm, info, s);
        if (comm.rank() != root) {
            comm.send(root, t, std::move(value));
            return std::nullopt;
        }
        // acc op v(r) for r = 0, 1, ...: folded in place where the op can
        // (operation.hpp), so no new value per rank; the order is fixed.
        std::optional<T> acc;
        for (int r = 0; r < comm.size(); ++r) {
            if (!acc) acc = r == root ? std::move(value) : comm.template receive<T>(r, t);
            else if (r == root) detail::combine_into(op, *acc, std::as_const(value), false);
            else detail::combine_into(op, *acc, comm.template receive<T>(r, t), false);
        }
        return acc;
    }
};
inline constexpr guarded_algorithm<reduce_flat_in_order_fn> reduce_flat_in_order{};

namespace detail {

enum class child_receive { sequential, parallel, chain, arrival };

// The chain of listing 8: the process for children[i..] receives child i's
// value while the rest of the chain runs beside it, then folds the two.
template <class T, class C, class Op>
T reduce_chain_link(C& comm, std::span<const int> children, const Op& op, tag t) {
    if (children.size() == 1) return comm.template receive<T>(children[0], t);
    auto [first, rest] = csp::par([&] { return comm.template receive<T>(children[0], t); },
                                  [&] { return reduce_chain_link<T>(comm, children.subspan(1), op, t); });
    return op(first, rest);
}

template <class C, class T, class Op>
std::optional<T> reduce_binomial_tree(C& comm, T value, const Op& op, int root, stream s, child_receive how,
                                      const algorithm_info& info) {
    topology::check(comm.rank(), comm.size(), root);
    const tag t = begin_call(comm, info, s);
    const int tree_root = commutes(op) ? root : 0;
    const auto peers = topology::binomial_reduce_peers(comm.rank(), comm.size(), tree_root);
    const auto& children = peers.receive_from;
    // Where parts fold from the messages' bytes (receive_view.hpp), the
    // parallel variant receives in turn: its folds wait for the children in
    // that order anyway, and no vector is decoded per child.
    if constexpr (folds_from_messages<C, T, Op>)
        if (how == child_receive::parallel) how = child_receive::sequential;
    if (!children.empty()) {
        switch (how) {
        case child_receive::sequential:
            for (int c : children) combine_received(comm, c, t, op, value, false);
            break;
        case child_receive::parallel: {
            auto parts = receive_from_each<T>(comm, children, t);
            value = fold_after(std::move(value), parts, op);
            break;
        }
        case child_receive::chain:
            combine_into(op, value, reduce_chain_link<T>(comm, children, op, t), false);
            break;
        case child_receive::arrival: {
            // Only the children still to send can fail the wait: one that
            // sent its part may be gone already (its call was over).
            std::vector<int> waiting(children.begin(), children.end());
            while (!waiting.empty()) {
                auto got = receive_any_of<T>(comm, t, waiting);
                std::erase(waiting, got.source);
                combine_into(op, value, std::move(got.value), false);
            }
            break;
        }
        }
    }
    // A rank that sends is not the tree's root, so it is done with its
    // value: a lone receiver (the parent) gets it moved, which a vector's
    // message adopts instead of copying.
    if (peers.send_to.size() == 1) comm.send(peers.send_to[0], t, std::move(value));
    else detail::send_to_each(comm, peers.send_to, t, value);
    // A tree rooted at 0 for an op that does not commute: 0 hands over.
    const tag hand_over = t.step(1);
    if (tree_root != root) {
        if (comm.rank() == tree_root) comm.send(root, hand_over, std::move(value));
        if (comm.rank() == root) return comm.template receive<T>(tree_root, hand_over);
        return std::nullopt;
    }
    if (comm.rank() == root) return value;
    return std::nullopt;
}

}  // namespace detail

struct reduce_binomial_fn {
    static constexpr algorithm_info info{.collective = "reduce", .name = "binomial", .code = 2};

    template <class C, class T, class Op>
    std::optional<T> operator()(C& comm, T value, const Op& op, int root = 0, stream s = {}) const {
        return detail::reduce_binomial_tree(comm, std::move(value), op, root, s, detail::child_receive::sequential,
                                            info);
    }
};
inline constexpr guarded_algorithm<reduce_binomial_fn> reduce_binomial{};
struct reduce_binomial_parallel_fn {
    static constexpr algorithm_info info{.collective = "reduce", .name = "binomial_parallel", .code = 3};

    template <class C, class T, class Op>
    std::optional<T> operator()(C& comm, T value, const Op& op, int root = 0, stream s = {}) const {
        return detail::reduce_binomial_tree(comm, std::move(value), op, root, s, detail::child_receive::parallel, info);
    }
};
inline constexpr guarded_algorithm<reduce_binomial_parallel_fn> reduce_binomial_parallel{};
struct reduce_chain_fn {
    static constexpr algorithm_info info{.collective = "reduce", .name = "chain", .code = 4};

    template <class C, class T, class Op>
    std::optional<T> operator()(C& comm, T value, const Op& op, int root = 0, stream s = {}) const {
        return detail::reduce_binomial_tree(comm, std::move(value), op, root, s, detail::child_receive::chain, info);
    }
};
inline constexpr guarded_algorithm<reduce_chain_fn> reduce_chain{};
struct reduce_arrival_fn {
    static constexpr algorithm_info info{
        .collective = "reduce", .name = "arrival", .code = 5, .needs_commuting_op = true};

    template <class C, class T, class Op>
    std::optional<T> operator()(C& comm, T value, const Op& op, int root = 0, stream s = {}) const {
        if (!commutes(op))
            throw usage_error("reduce_arrival folds in arrival order and needs an op that commutes "
                              "(csp::collectives::commuting(f), or a built-in op)");
        return detail::reduce_binomial_tree(comm, std::move(value), op, root, s, detail::child_receive::arrival, info);
    }
};
inline constexpr guarded_algorithm<reduce_arrival_fn> reduce_arrival{};

struct reduce_pipeline_fn {
    static constexpr algorithm_info info{
        .collective = "reduce", .name = "pipeline", .code = 6, .needs_elementwise = true};
    static constexpr std::size_t segment_bytes = 64 * 1024;

    template <class C, class T, class Op>
    std::optional<T> operator()(C& comm, T value, const Op& op, int root = 0, stream s = {}) const {
        if constexpr (!detail::is_vector<T>::value) {
            throw usage_error("reduce pipeline: cuts a vector into segments; it cannot take a single value");
        } else {
            if (!acts_elementwise(op))
                throw usage_error("reduce pipeline: needs an op that acts element by element");
            topology::check(comm.rank(), comm.size(), root);
            const tag t = detail::begin_call(comm, info, s);
            const int n = comm.size();
            constexpr int none = -1;
            // Place p of the chain holds rank_at(p); segments flow from
            // place n-1 down to place 0, which ends with the fold.
            const int first = commutes(op) ? root : 0;
            auto rank_at = [&](int p) { return (first + p) % n; };
            const int place = (comm.rank() - first + n) % n;
            const int from = place + 1 < n ? rank_at(place + 1) : none;
            const int to = place > 0 ? rank_at(place - 1) : none;
            const tag lengths = t, segments = t.step(1), handed_over = t.step(2);

            const std::size_t length = value.size();
            if (to != none) comm.send(to, lengths, static_cast<std::uint64_t>(length));
            if (from != none) {
                const auto theirs = comm.template receive<std::uint64_t>(from, lengths);
                if (theirs != length)
                    throw usage_error("reduce pipeline: rank " + std::to_string(from) + " reduces a vector of " +
                                      std::to_string(theirs) + " elements, rank " + std::to_string(comm.rank()) +
                                      " one of " + std::to_string(length));
            }
            const std::size_t per = std::max<std::size_t>(1, segment_bytes / sizeof(typename T::value_type));
            const std::size_t count = (length + per - 1) / per;
            auto lo_of = [&](std::size_t k) { return k * per; };
            auto hi_of = [&](std::size_t k) { return std::min(length, (k + 1) * per); };
            // Segments this rank sends stay as they are until book.settle():
            // a net communicator sends them from `value` itself.
            net::loans book;
            const bool hands_over = rank_at(0) != root && comm.rank() == rank_at(0);
            for (std::size_t k = 0; k < count; ++k) {
                if (from != none) detail::fold_received_part(comm, from, segments, op, value, lo_of(k), hi_of(k));
                if (to != none) detail::send_part(comm, to, segments, value, lo_of(k), hi_of(k), book);
                if (hands_over) detail::send_part(comm, root, handed_over, value, lo_of(k), hi_of(k), book);
            }
            book.settle();
            if (comm.rank() != root) return std::nullopt;
            if (rank_at(0) != root)
                for (std::size_t k = 0; k < count; ++k)
                    detail::receive_part(comm, rank_at(0), handed_over, value, lo_of(k), hi_of(k));
            return value;
        }
    }
};
inline constexpr guarded_algorithm<reduce_pipeline_fn> reduce_pipeline{};

struct reduce_shared_memory_fn {
    static constexpr algorithm_info info{
        .collective = "reduce", .name = "shared_memory", .code = 7, .needs_shared_memory = true};

    template <class C, class T, class Op>
    std::optional<T> operator()(C& comm, T value, const Op& op, int root = 0, stream s = {}) const {
        shared_board* board = detail::board_of(comm, s);
        if (board == nullptr) return reduce_binomial_parallel_fn{}(comm, std::move(value), op, root, s);
        topology::check(comm.rank(), comm.size(), root);
        detail::begin_call(comm, info, s);  // the steps below draw their own tags
        return board->meet(
            comm.rank(), info.collective, true, value,
            [&](const auto& parts) -> std::optional<T> {
                if (comm.rank() != root) return std::nullopt;
                detail::fold_in_rank_order(op, value, parts);
                return std::move(value);
            },
            {.root = root, .op = detail::op_id<Op>()});
    }
};
inline constexpr guarded_algorithm<reduce_shared_memory_fn> reduce_shared_memory{};

}  // namespace csp::collectives
