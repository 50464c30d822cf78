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
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "csp/error.hpp"
#include "csp/type_name.hpp"

#include "collectives/algorithm.hpp"
#include "collectives/communicator.hpp"
#include "collectives/detail/host_meeting.hpp"
#include "collectives/detail/peers.hpp"
#include "collectives/operation.hpp"
#include "collectives/receive_view.hpp"
#include "collectives/relay.hpp"
#include "collectives/shared_board.hpp"
#include "collectives/topology.hpp"
#include "collectives/revocation.hpp"

namespace csp::collectives {

struct broadcast_flat_fn {
    static constexpr algorithm_info info{.collective = "broadcast", .name = "flat", .code = 1};

    template <class C, class T>
    T operator()(C& comm, T value, int root = 0, stream s = {}) const {
        topology::check(comm.rank(), comm.size(), root);
        const tag t = detail::begin_call(comm, info, s);
        if (comm.rank() != root) return comm.template receive<T>(root, t);
        std::vector<int> others;
        for (int r = 0; r < comm.size(); ++r)
            if (r != root) others.push_back(r);
        detail::send_to_each(comm, others, t, value);
        return value;
    }
};
inline constexpr guarded_algorithm<broadcast_flat_fn> broadcast_flat{};

struct broadcast_binomial_fn {
    static constexpr algorithm_info info{.collective = "broadcast", .name = "binomial", .code = 2};

    template <class C, class T>
    T operator()(C& comm, T value, int root = 0, stream s = {}) const {
        const int parent = topology::binomial_parent(comm.rank(), comm.size(), root);
        const tag t = detail::begin_call(comm, info, s);
        // Largest subtree first: it has the longest way to go.
        auto children = topology::binomial_children(comm.rank(), comm.size(), root);
        std::reverse(children.begin(), children.end());
        // Encoded once at the root, passed on as it came below it (relay.hpp).
        if (parent >= 0) return pass_on<T>(comm, parent, children, t);
        detail::send_to_each(comm, children, t, value);
        return value;
    }
};
inline constexpr guarded_algorithm<broadcast_binomial_fn> broadcast_binomial{};

struct broadcast_pipeline_fn {
    static constexpr algorithm_info info{
        .collective = "broadcast", .name = "pipeline", .code = 3, .needs_elementwise = true};
    static constexpr std::size_t segment_bytes = 64 * 1024;

    template <class C, class T>
    T operator()(C& comm, T value, int root = 0, stream s = {}) const {
        if constexpr (!detail::is_vector<T>::value) {
            throw usage_error("broadcast pipeline: cuts a vector into segments; it cannot take a single value");
        } else {
            topology::check(comm.rank(), comm.size(), root);
            const tag t = detail::begin_call(comm, info, s);
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
inline constexpr guarded_algorithm<broadcast_pipeline_fn> broadcast_pipeline{};

struct broadcast_shared_memory_fn {
    static constexpr algorithm_info info{
        .collective = "broadcast", .name = "shared_memory", .code = 4, .needs_shared_memory = true};

    template <class C, class T>
    T operator()(C& comm, T value, int root = 0, stream s = {}) const {
        shared_board* board = detail::board_of(comm, s);
        if (board == nullptr) return broadcast_binomial_fn{}(comm, std::move(value), root, s);
        topology::check(comm.rank(), comm.size(), root);
        detail::begin_call(comm, info, s);  // the steps below draw their own tags
        const bool is_root = comm.rank() == root;
        return board->meet(
            comm.rank(), info.collective, is_root, value,
            [&](const auto& parts) {
                if (!is_root) value = parts[static_cast<std::size_t>(root)];
                return std::move(value);
            },
            {.root = root});
    }
};
inline constexpr guarded_algorithm<broadcast_shared_memory_fn> broadcast_shared_memory{};
struct broadcast_host_memory_fn {
    static constexpr algorithm_info info{.collective = "broadcast",
                                         .name = "host_memory",
                                         .code = 5,
                                         .needs_elementwise = true,
                                         .needs_host_level = true};

    // One meeting on the host board: the root copies its value into its
    // part, the others copy it out. A vector over a part: the meeting
    // carries its length, then the large board passes it in chunks, one
    // meeting each (the root copies chunk j + 1 in while the others copy
    // chunk j out). Other values over a part, and other communicators: the
    // binomial tree.
    template <class C, class T>
    T operator()(C& comm, T value, int root = 0, stream s = {}) const {
        if constexpr (detail::host_board_value<T> && requires(tag t) { comm.board_on_host(s, t); }) {
            topology::check(comm.rank(), comm.size(), root);
            const bool is_root = comm.rank() == root;
            const auto bytes = is_root ? detail::bytes_of(value) : std::span<const std::byte>{};
            if (const auto meeting =
                    detail::meet_on_host(comm, s, info, host_board::type_of<T>(), bytes, {.root = root})) {
                const auto [board, m] = *meeting;
                detail::refuse_other_args(info, *board, m);
                for (int q = 0; q < board->size(); ++q)
                    if (board->part_of(m, q).type != board->part_of(m, root).type)
                        throw detail::agreed_error("broadcast host_memory: rank " + std::to_string(q) +
                                          " passed a value of another type than the root's " + csp::type_name<T>());
                // Whether the root's value is in its part: every rank sees it.
                const auto from = board->part_of(m, root);
                if (from.fits) {
                    if (!is_root) value = detail::value_from_part<T>(from);
                    return value;
                }
                if constexpr (detail::element_vector<T>) {
                    const tag u = comm.next_tag(s);
                    if (host_board* large = comm.large_board_on_host(s, u)) {
                        if (!is_root) value.resize(from.bytes / sizeof(typename T::value_type));
                        in_chunks(comm, *large, u, std::span(value), root, host_board::type_of<T>());
                        return value;
                    }
                }
            }
        }
        return broadcast_binomial_fn{}(comm, std::move(value), root, s);
    }

    // broadcast_into's step on the host board (dispatch.hpp): every rank's
    // buffer gets the root's elements, copied straight out of the board. In
    // one meeting the root puts its elements in its part (or, over a part,
    // says how many: the large board then passes them in chunks) and every
    // other rank its buffer's length, so a length that differs from the
    // root's is refused at every rank alike. False, with no tag used up
    // beyond the meeting's, when the stream has no board (nor a large one
    // for a buffer over a part): the caller passes messages.
    template <class C, class E>
    bool into(C& comm, std::span<E> data, int root, stream s) const {
        if constexpr (requires(tag t) { comm.board_on_host(s, t); }) {
            using V = std::vector<std::remove_const_t<E>>;
            const bool is_root = comm.rank() == root;
            const std::uint64_t length = data.size();
            const auto bytes = is_root ? std::as_bytes(data) : std::as_bytes(std::span(&length, 1));
            const auto meeting = detail::meet_on_host(comm, s, info, host_board::type_of<V>(), bytes, {.root = root});
            if (!meeting) return false;
            const auto [board, m] = *meeting;
            detail::refuse_other_args(info, *board, m);
            const auto from = board->part_of(m, root);
            for (int q = 0; q < board->size(); ++q) {
                const auto p = board->part_of(m, q);
                if (p.type != from.type)
                    throw detail::agreed_error("broadcast_into host_memory: rank " + std::to_string(q) +
                                      " passed a buffer of another type than the root's " + csp::type_name<V>());
                if (q == root) continue;
                std::uint64_t theirs;
                std::memcpy(&theirs, p.data, sizeof theirs);
                if (theirs * sizeof(E) != from.bytes)
                    throw detail::agreed_error("broadcast_into: rank " + std::to_string(q) + "'s buffer holds " +
                                      std::to_string(theirs) + " elements, the root's " +
                                      std::to_string(from.bytes / sizeof(E)));
            }
            if (from.fits) {
                if (!is_root && !data.empty()) std::memcpy(data.data(), from.data, from.bytes);
                return true;
            }
            const tag u = comm.next_tag(s);
            host_board* large = comm.large_board_on_host(s, u);
            if (large == nullptr) return false;
            in_chunks(comm, *large, u, data, root, host_board::type_of<V>());
            return true;
        }
        return false;
    }

private:
    // The root's elements in chunks of a large part, between buffers of one
    // length: the root writes its part of meeting m + 1 once m has
    // completed, as arrive() would; the others read the root's part of m
    // before they arrive at m + 1.
    template <class C, class E>
    static void in_chunks(C& comm, host_board& board, tag t, std::span<E> data, int root, std::uint32_t type) {
        const bool is_root = comm.rank() == root;
        const std::size_t per_chunk = board.capacity() / sizeof(E);
        for (std::size_t first = 0; first < data.size(); first += per_chunk) {
            const std::size_t count = std::min(per_chunk, data.size() - first);
            if (is_root) std::memcpy(board.own_part(board.meetings() + 1), data.data() + first, count * sizeof(E));
            const std::uint64_t m = board.arrive(type, {});
            board.wait(comm, t, m);
            if (!is_root) std::memcpy(data.data() + first, board.part_of(m, root).data, count * sizeof(E));
        }
    }
};
inline constexpr guarded_algorithm<broadcast_host_memory_fn> broadcast_host_memory{};

}  // namespace csp::collectives
