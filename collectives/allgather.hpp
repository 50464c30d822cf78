#pragma once
// Allgather: every rank gets every rank's value, in rank order.
//
//   gather_broadcast  a parallel gather to rank 0, then a binomial broadcast
//                     of the whole vector (listing 15). 2(n-1) messages.
//   ring              in step k (k = 0..n-2) rank r passes the value of
//                     rank (r-k) mod n to r+1 and receives that of
//                     (r-k-1) mod n from r-1. n(n-1) messages of one value
//                     each, n-1 rounds: every rank sends and receives n-1
//                     values once, where the broadcast above sends the whole
//                     vector down a tree (for large values).
//   host_memory       the ranks are processes of one host (a
//                     net_communicator over shared memory): one meeting on
//                     the host board (host_board.hpp), where each rank
//                     copies its value into its part and every part out;
//                     vectors over a part pass through the large board in
//                     chunks, one meeting per chunk. No message; every
//                     rank copies the n - 1 other values once.
#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "collectives/broadcast.hpp"
#include "collectives/detail/host_meeting.hpp"
#include "collectives/gather.hpp"
#include "collectives/receive_view.hpp"
#include "collectives/relay.hpp"
#include "collectives/revocation.hpp"

namespace csp::collectives {

namespace detail {

// The ring allgather (below) of the blocks of one vector, in place: block
// `rank` of `values` (elements [offsets[r], offsets[r + 1])) is this rank's
// and goes round; the others arrive from r-1, are passed on as they came
// (relay.hpp), and copied once, into their place. For the ring allreduce.
// This rank's block is lent through `book` (receive_view.hpp's send_part)
// and not written here; the caller settles before it writes it.
template <class C, class V>
void allgather_ring_in_place(C& comm, V& values, const std::vector<std::size_t>& offsets, tag t, net::loans& book) {
    using E = typename V::value_type;
    const int n = comm.size(), me = comm.rank();
    if (n == 1) return;
    const int next = (me + 1) % n, prev = (me + n - 1) % n;
    auto part = [&](std::size_t b) { return std::span<E>(values.data() + offsets[b], offsets[b + 1] - offsets[b]); };
    const auto mine = static_cast<std::size_t>(me);
    send_part(comm, next, t, values, offsets[mine], offsets[mine + 1], book);
    for (int k = 0; k < n - 1; ++k) {
        const auto b = static_cast<std::size_t>(((me - k - 1) % n + n) % n);
        auto place = [&](std::span<const E> got) {
            auto into = part(b);
            if (got.size() != into.size())
                throw usage_error("allgather: rank " + std::to_string(prev) + " passed on block " + std::to_string(b) +
                                  " with " + std::to_string(got.size()) + " elements, not " +
                                  std::to_string(into.size()) + "; do all ranks pass vectors of one length?");
            std::copy(got.begin(), got.end(), into.begin());
        };
        if (k < n - 2) relay<E>(comm, prev, next, t, place);
        else receive_view<E>(comm, prev, t, place);
    }
}

}  // namespace detail

struct allgather_gather_broadcast_fn {
    static constexpr algorithm_info info{.collective = "allgather", .name = "gather_broadcast", .code = 1};

    template <class C, class T>
    std::vector<T> operator()(C& comm, T value, stream s = {}) const {
        detail::begin_call(comm, info, s);  // the steps below draw their own tags
        auto all = gather_parallel_fn{}(comm, std::move(value), 0, s);
        return broadcast_binomial_fn{}(comm, all ? std::move(*all) : std::vector<T>{}, 0, s);
    }
};
inline constexpr guarded_algorithm<allgather_gather_broadcast_fn> allgather_gather_broadcast{};

struct allgather_ring_fn {
    static constexpr algorithm_info info{.collective = "allgather", .name = "ring", .code = 2};

    template <class C, class T>
    std::vector<T> operator()(C& comm, T value, stream s = {}) const {
        const int n = comm.size(), me = comm.rank();
        const tag t = detail::begin_call(comm, info, s);
        std::vector<T> all(static_cast<std::size_t>(n));
        all[static_cast<std::size_t>(me)] = std::move(value);
        const int next = (me + 1) % n, prev = (me + n - 1) % n;
        // One tag throughout: each rank hears only from r-1, in send order.
        if constexpr (detail::element_vector<T>) {
            // What arrives in step k is what goes out in step k+1: relayed
            // as it came, and copied once, into its place. This rank's own
            // value goes from where it is (lent: send_elements) and is not
            // touched again before the settle.
            using E = typename T::value_type;
            net::loans book;
            if (n > 1)
                detail::send_elements(comm, next, t, std::span<const E>(all[static_cast<std::size_t>(me)]), book);
            for (int k = 0; k < n - 1; ++k) {
                auto& in = all[static_cast<std::size_t>(((me - k - 1) % n + n) % n)];
                auto keep = [&in](std::span<const E> got) { in.assign(got.begin(), got.end()); };
                if (k < n - 2) relay<E>(comm, prev, next, t, keep);
                else receive_view<E>(comm, prev, t, keep);
            }
            book.settle();
        } else {
            for (int k = 0; k < n - 1; ++k) {
                const auto out = static_cast<std::size_t>(((me - k) % n + n) % n);
                const auto in = static_cast<std::size_t>(((me - k - 1) % n + n) % n);
                comm.send(next, t, all[out]);
                all[in] = comm.template receive<T>(prev, t);
            }
        }
        return all;
    }
};
inline constexpr guarded_algorithm<allgather_ring_fn> allgather_ring{};

struct allgather_host_memory_fn {
    static constexpr algorithm_info info{
        .collective = "allgather", .name = "host_memory", .code = 3, .needs_host_level = true};

    // The small board's meeting carries every value that fits a part and
    // every rank's type and size; all ranks see all parts, so a type that
    // differs makes every rank throw, and a value over a part sends every
    // rank on to the large board (vectors) or the ring (other values)
    // together. Without a board (other communicators, no shared memory):
    // the ring.
    template <class C, class T>
    std::vector<T> operator()(C& comm, T value, stream s = {}) const {
        if constexpr (detail::host_board_value<T> && requires(tag t) { comm.board_on_host(s, t); }) {
            if (const auto meeting =
                    detail::meet_on_host(comm, s, info, host_board::type_of<T>(), detail::bytes_of(value))) {
                const auto [board, m] = *meeting;
                const int n = board->size(), me = comm.rank();
                bool all_fit = true;
                for (int q = 0; q < n; ++q) {
                    const auto part = board->part_of(m, q);
                    if (part.type != host_board::type_of<T>())
                        throw detail::agreed_error("allgather host_memory: rank " + std::to_string(q) +
                                          " passed a value of another type than rank " + std::to_string(me) + "'s " +
                                          csp::type_name<T>());
                    all_fit = all_fit && part.fits;
                }
                std::vector<T> all(static_cast<std::size_t>(n));
                if (all_fit) {
                    for (int q = 0; q < n; ++q)
                        if (q != me)
                            all[static_cast<std::size_t>(q)] = detail::value_from_part<T>(board->part_of(m, q));
                    all[static_cast<std::size_t>(me)] = std::move(value);
                    return all;
                }
                if constexpr (detail::element_vector<T>) {
                    using E = typename T::value_type;
                    for (int q = 0; q < n; ++q)
                        if (q != me) all[static_cast<std::size_t>(q)].resize(board->part_of(m, q).bytes / sizeof(E));
                    all[static_cast<std::size_t>(me)] = std::move(value);
                    const tag u = comm.next_tag(s);
                    if (host_board* large = comm.large_board_on_host(s, u))
                        return in_chunks(comm, *large, u, std::move(all));
                    value = std::move(all[static_cast<std::size_t>(me)]);
                }
            }
        }
        return allgather_ring_fn{}(comm, std::move(value), s);
    }

private:
    // Every rank's vector (`all`, its own in place, the others sized) in
    // chunks of a large part: at meeting m each rank has written chunk j of
    // its own vector into its part (before arriving, as arrive() would),
    // and copies chunk j of every other rank's out before it arrives at
    // m + 1. Ranks whose vectors are shorter stop writing, not meeting.
    template <class C, class T>
    static std::vector<T> in_chunks(C& comm, host_board& board, tag t, std::vector<T> all) {
        using E = typename T::value_type;
        const auto me = static_cast<std::size_t>(comm.rank());
        const std::size_t per_chunk = board.capacity() / sizeof(E);
        std::size_t longest = 0;
        for (const T& v : all) longest = std::max(longest, v.size());
        for (std::size_t first = 0; first < longest; first += per_chunk) {
            const T& mine = all[me];
            if (first < mine.size())
                std::copy(mine.data() + first, mine.data() + first + std::min(per_chunk, mine.size() - first),
                          reinterpret_cast<E*>(board.own_part(board.meetings() + 1)));
            const std::uint64_t m = board.arrive(host_board::type_of<T>(), {});
            board.wait(comm, t, m);
            for (std::size_t q = 0; q < all.size(); ++q) {
                if (q == me || first >= all[q].size()) continue;
                const auto* chunk = reinterpret_cast<const E*>(board.part_of(m, static_cast<int>(q)).data);
                std::copy(chunk, chunk + std::min(per_chunk, all[q].size() - first), all[q].data() + first);
            }
        }
        return all;
    }
};
inline constexpr guarded_algorithm<allgather_host_memory_fn> allgather_host_memory{};

}  // namespace csp::collectives
