#pragma once
// Broadcast: the root's value ends up at every rank.
//
// Every rank calls it; what a non-root passes as `value` is ignored (a
// default-constructed T will do). Returns the root's value everywhere.
//
//   linear    the root sends to every other rank (paper, listings 2-3).
//             n-1 messages, all from the root; for small groups.
//   binomial  each rank receives from its parent in the binomial tree and
//             sends on to its children (listing 4). n-1 messages,
//             ceil(log2 n) rounds. Seven ranks, root 0:
//                 round 1: 0->4   round 2: 0->2 4->6   round 3: 0->1 2->3 4->5
//   pipeline  vectors only: a chain in rank order from the root, the vector
//             cut into segments of about 64 KiB; each rank passes segment i
//             on as soon as it has it, while the next one arrives. n-1 + S
//             messages per link (S segments, plus one with the length),
//             n-2 + S rounds of one segment: for large vectors, where the
//             tree sends the whole vector log2 n times in a row.
//   shared_memory  ranks of one address space (shared_board.hpp): the root
//             copies its value into its slot, all sync once, each copies
//             it out. Elsewhere it runs binomial.
#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "csp/error.hpp"

#include "collectives/algorithm.hpp"
#include "collectives/communicator.hpp"
#include "collectives/detail/peers.hpp"
#include "collectives/operation.hpp"
#include "collectives/receive_view.hpp"
#include "collectives/relay.hpp"
#include "collectives/shared_board.hpp"
#include "collectives/topology.hpp"

namespace csp::collectives {

struct broadcast_flat_fn {
    static constexpr algorithm_info info{"broadcast", "flat"};

    template <class C, class T>
    T operator()(C& comm, T value, int root = 0, stream s = {}) const {
        topology::check(comm.rank(), comm.size(), root);
        const tag t = comm.next_tag(s);
        detail::announce(comm, info, t);
        if (comm.rank() != root) return comm.template receive<T>(root, t);
        std::vector<int> others;
        for (int r = 0; r < comm.size(); ++r)
            if (r != root) others.push_back(r);
        detail::send_to_each(comm, others, t, value);
        return value;
    }
};
inline constexpr broadcast_flat_fn broadcast_flat{};

struct broadcast_binomial_fn {
    static constexpr algorithm_info info{"broadcast", "binomial"};

    template <class C, class T>
    T operator()(C& comm, T value, int root = 0, stream s = {}) const {
        const int parent = topology::binomial_parent(comm.rank(), comm.size(), root);
        const tag t = comm.next_tag(s);
        detail::announce(comm, info, t);
        // Largest subtree first: it has the longest way to go.
        auto children = topology::binomial_children(comm.rank(), comm.size(), root);
        std::reverse(children.begin(), children.end());
        // Encoded once at the root, passed on as it came below it (relay.hpp).
        if (parent >= 0) return pass_on<T>(comm, parent, children, t);
        detail::send_to_each(comm, children, t, value);
        return value;
    }
};
inline constexpr broadcast_binomial_fn broadcast_binomial{};

struct broadcast_pipeline_fn {
    static constexpr algorithm_info info{"broadcast", "pipeline", false, true};
    static constexpr std::size_t segment_bytes = 64 * 1024;

    template <class C, class T>
    T operator()(C& comm, T value, int root = 0, stream s = {}) const {
        if constexpr (!detail::is_vector<T>::value) {
            throw usage_error("broadcast pipeline: cuts a vector into segments; it cannot take a single value");
        } else {
            topology::check(comm.rank(), comm.size(), root);
            const tag t = comm.next_tag(s);
            detail::announce(comm, info, t);
            const int n = comm.size();
            const int v = (comm.rank() - root + n) % n;
            const int prev = (comm.rank() - 1 + n) % n, next = (comm.rank() + 1) % n;
            const bool last = v == n - 1;
            const std::size_t per = std::max<std::size_t>(1, segment_bytes / sizeof(typename T::value_type));
            // One tag throughout: each rank hears only from prev, in order.
            if (v == 0) {
                if (!last) {
                    comm.send(next, t, value.size());
                    // send_part lends segments of plain elements from
                    // `value` itself, which nothing writes before the
                    // settle, and copies any other vector's.
                    net::loans book;
                    for (std::size_t at = 0; at < value.size(); at += per)
                        detail::send_part(comm, next, t, value, at, std::min(at + per, value.size()), book);
                    book.settle();
                }
                return value;
            }
            const auto length = comm.template receive<std::size_t>(prev, t);
            if (!last) comm.send(next, t, length);
            T out;
            out.reserve(length);
            while (out.size() < length) {
                if constexpr (detail::element_vector<T>) {
                    // Passed on as it came, copied once, into `out`.
                    using E = typename T::value_type;
                    auto keep = [&out](std::span<const E> got) { out.insert(out.end(), got.begin(), got.end()); };
                    if (!last) relay<E>(comm, prev, next, t, keep);
                    else receive_view<E>(comm, prev, t, keep);
                } else {
                    T segment = comm.template receive<T>(prev, t);
                    out.insert(out.end(), segment.begin(), segment.end());
                    if (!last) comm.send(next, t, std::move(segment));
                }
            }
            return out;
        }
    }
};
inline constexpr broadcast_pipeline_fn broadcast_pipeline{};

struct broadcast_shared_memory_fn {
    static constexpr algorithm_info info{"broadcast", "shared_memory", false, false, true};

    template <class C, class T>
    T operator()(C& comm, T value, int root = 0, stream s = {}) const {
        shared_board* board = detail::board_of(comm, s);
        if (board == nullptr) return broadcast_binomial(comm, std::move(value), root, s);
        topology::check(comm.rank(), comm.size(), root);
        const tag t = comm.next_tag(s);
        detail::announce(comm, info, t);
        const bool is_root = comm.rank() == root;
        return board->meet(comm.rank(), is_root, value, [&](const auto& parts) {
            if (!is_root) value = parts[static_cast<std::size_t>(root)];
            return std::move(value);
        });
    }
};
inline constexpr broadcast_shared_memory_fn broadcast_shared_memory{};

}  // namespace csp::collectives
