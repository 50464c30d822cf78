#pragma once
// Allreduce: every rank gets v0 op v1 op ... op v(n-1).
//
//   reduce_broadcast  a binomial reduce with parallel receive to rank 0,
//                     then a binomial broadcast from it (listing 12).
//                     2(n-1) messages, 2 ceil(log2 n) rounds; a rank that
//                     is done reducing waits for the broadcast.
//   butterfly         recursive doubling (Aspen paper, section 2.1): in
//                     round k each rank exchanges its partial value with
//                     rank xor 2^k and both fold, so reduce and broadcast
//                     happen in one sweep. Sizes that are not a power of
//                     two fold the extra ranks in first and hand them the
//                     result last (topology::butterfly_schedule). Keeps
//                     rank order. n log2 n messages, log2 n rounds (+2).
//   ring              vectors with a commuting element-wise op (the
//                     built-in ones): a ring reduce_scatter of n nearly
//                     equal blocks, then a ring allgather of the blocks.
//                     2n(n-1) messages of about 1/n of the vector, 2(n-1)
//                     rounds: each rank sends and folds about 2(n-1)/n of
//                     the vector in all, however many ranks (for large
//                     vectors; the tree and the butterfly send it whole
//                     log2 n times).
//   rabenseifner      vectors with a commuting element-wise op: a
//                     reduce_scatter by recursive halving (the window of
//                     blocks a rank keeps halves each round, the other
//                     half going to the partner rank xor 2^k), then an
//                     allgather by recursive doubling. The ranks beyond the
//                     largest power of two p2 first hand their vector to a
//                     neighbour and get the result back at the end.
//                     2 log2 p2 rounds (+2), each rank sending about 2m.
//   shared_memory     ranks of one address space (local_communicator,
//                     shared_board.hpp): each copies its value into its
//                     slot, all sync once on a barrier, each folds the n
//                     slots in rank order. No messages; 1 barrier, n-1
//                     folds per rank. Vectors of 4096 elements or more
//                     with a built-in op: each rank folds one block of
//                     the n vectors, a second sync, each copies the
//                     others' blocks. Elsewhere (other communicators, or
//                     under a model recorder) it runs reduce_broadcast.
//   host_memory       OS processes of one host (a net_communicator whose
//                     ranks share this host's memory, host_board.hpp):
//                     each copies its value into its part of a shared
//                     segment and arrives, waits until all have arrived,
//                     and folds the n parts in rank order. No message
//                     unless a rank waits long enough to sleep (one wake
//                     message each). Plain values and vectors of plain
//                     elements up to host_board::part_capacity bytes.
//                     Larger vectors with an element-wise op go on to a
//                     large board in chunks (a part each): each rank folds
//                     its 1/n block of a chunk while the next is passed,
//                     and copies the others' blocks out; one meeting per
//                     chunk, plus two. Other large values, and other
//                     communicators, run the butterfly.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "collectives/allgather.hpp"
#include "collectives/broadcast.hpp"
#include "collectives/detail/host_meeting.hpp"
#include "collectives/reduce.hpp"
#include "collectives/receive_view.hpp"
#include "collectives/reduce_scatter.hpp"
#include "collectives/schedule.hpp"
#include "collectives/shared_board.hpp"
#include "collectives/revocation.hpp"
#include "csp/type_name.hpp"
#include "csp/view.hpp"

namespace csp::collectives {

namespace detail {
// The argument checks of the algorithms that cut vectors into blocks.
[[noreturn]] inline void refuse_single_value(const char* algorithm) {
    throw usage_error(std::string(algorithm) + ": cuts a vector into blocks; it cannot take a single value");
}
template <class Op>
void require_blockwise_op(const char* algorithm, const Op& op) {
    if (!commutes(op) || !acts_elementwise(op))
        throw usage_error(std::string(algorithm) + ": needs an op that commutes and acts element by element");
}
}  // namespace detail

struct allreduce_reduce_broadcast_fn {
    static constexpr algorithm_info info{.collective = "allreduce", .name = "reduce_broadcast", .code = 1};

    template <class C, class T, class Op>
    T operator()(C& comm, T value, const Op& op, stream s = {}) const {
        detail::begin_call(comm, info, s);  // the steps below draw their own tags
        auto total = reduce_binomial_parallel_fn{}(comm, std::move(value), op, 0, s);
        return broadcast_binomial_fn{}(comm, total ? std::move(*total) : T{}, 0, s);
    }
};
inline constexpr guarded_algorithm<allreduce_reduce_broadcast_fn> allreduce_reduce_broadcast{};

struct allreduce_butterfly_fn {
    static constexpr algorithm_info info{.collective = "allreduce", .name = "butterfly", .code = 2};

    template <class C, class T, class Op>
    T operator()(C& comm, T value, const Op& op, stream s = {}) const {
        const tag t = detail::begin_call(comm, info, s);
        const auto plans = detail::butterfly_plans(comm.size());
        auto out = run_plan(comm, (*plans)[static_cast<std::size_t>(comm.rank())], std::optional<T>(std::move(value)),
                            op, t);
        return std::move(*out);
    }
};
inline constexpr guarded_algorithm<allreduce_butterfly_fn> allreduce_butterfly{};

struct allreduce_ring_fn {
    static constexpr algorithm_info info{
        .collective = "allreduce", .name = "ring", .code = 3, .needs_commuting_op = true, .needs_elementwise = true};

    template <class C, class T, class Op>
    T operator()(C& comm, T value, const Op& op, stream s = {}) const {
        if constexpr (!detail::is_vector<T>::value) {
            detail::refuse_single_value("allreduce ring");
        } else {
            detail::require_blockwise_op("allreduce ring", op);
            const tag t = detail::begin_call(comm, info, s);
            const auto n = static_cast<std::size_t>(comm.size()), length = value.size();
            const auto counts = detail::even_counts(length, n);
            if constexpr (detail::folds_from_messages<C, T, Op>) {
                // Both halves inside `value`: no block is copied out of it or
                // into a vector of its own on the way (reduce_scatter.hpp).
                const auto offsets = detail::block_offsets(counts, length, comm.size());
                net::loans book;
                detail::reduce_scatter_ring_in_place(comm, value, offsets, op, t.step(1), book);
                book.settle();  // the allgather writes the blocks the reduce_scatter sent
                detail::allgather_ring_in_place(comm, value, offsets, t.step(2), book);
                book.settle();
                return value;
            }
            auto mine = reduce_scatter_ring_fn{}(comm, std::move(value), counts, op, s);
            const auto blocks = allgather_ring_fn{}(comm, std::move(mine), s);
            T out;
            out.reserve(length);
            for (const auto& b : blocks) out.insert(out.end(), b.begin(), b.end());
            return out;
        }
    }
};
inline constexpr guarded_algorithm<allreduce_ring_fn> allreduce_ring{};

struct allreduce_rabenseifner_fn {
    static constexpr algorithm_info info{.collective = "allreduce",
                                         .name = "rabenseifner",
                                         .code = 4,
                                         .needs_commuting_op = true,
                                         .needs_elementwise = true};

    template <class C, class T, class Op>
    T operator()(C& comm, T value, const Op& op, stream s = {}) const {
        if constexpr (!detail::is_vector<T>::value) {
            detail::refuse_single_value("allreduce rabenseifner");
        } else {
            detail::require_blockwise_op("allreduce rabenseifner", op);
            const tag t = detail::begin_call(comm, info, s);
            const int n = comm.size(), me = comm.rank();
            int p2 = 1, rounds = 0;
            while (p2 * 2 <= n) p2 *= 2, ++rounds;
            const int extra = n - p2;
            // Ranks 0 .. 2*extra-1 pair up: the even one hands its vector to
            // the odd one (rank order kept: the even one's part first) and
            // waits for the result. The p2 others are numbered 0 .. p2-1.
            if (me < 2 * extra && me % 2 == 0) {
                comm.send(me + 1, t, std::move(value));  // done with it: its bytes are adopted, not copied
                return comm.template receive<T>(me + 1, t.step(static_cast<std::uint8_t>(2 * rounds + 1)));
            }
            if (me < 2 * extra) detail::combine_into(op, value, comm.template receive<T>(me - 1, t), true);
            const int v = me < 2 * extra ? me / 2 : me - extra;
            auto rank_of = [extra](int u) { return u < extra ? 2 * u + 1 : u + extra; };
            const std::size_t length = value.size();
            // Block b of p2 is elements [edge(b), edge(b + 1)).
            auto edge = [&](int b) { return static_cast<std::ptrdiff_t>(length * static_cast<std::size_t>(b) / p2); };
            // Blocks [lo, hi), elements [edge(lo), edge(hi)), go out from the
            // rank's vector itself, lent where the communicator sends bytes
            // (receive_view.hpp's send_part), else copied once into the
            // message. A block sent while halving is written again only
            // while doubling, after the settle between the two; a block sent
            // while doubling is not written again.
            net::loans book;
            auto send_blocks = [&](int to, tag at, int lo, int hi) {
                detail::send_part(comm, to, at, value, static_cast<std::size_t>(edge(lo)),
                                  static_cast<std::size_t>(edge(hi)), book);
            };
            auto expect_length = [&](std::size_t got, int lo, int hi, int from) {
                if (got != static_cast<std::size_t>(edge(hi) - edge(lo)))
                    throw usage_error("allreduce rabenseifner: rank " + std::to_string(from) + " sent " +
                                      std::to_string(got) + " elements where " + std::to_string(edge(hi) - edge(lo)) +
                                      " were due; do all ranks pass vectors of one length?");
            };
            // A received block is folded, or copied, straight into `value`
            // from where it arrived (receive_view.hpp) when the op folds in
            // place; otherwise it is received as a vector first.
            using E = typename T::value_type;
            constexpr bool in_place = detail::folds_in_place<Op, T> && detail::element_vector<T>;
            // The partner's blocks of each doubling step land in place
            // (receive_view.hpp's land), all named now, before halving: a
            // peer's doubling blocks then go straight into `value` even when
            // they arrive while this rank still halves, instead of waiting
            // in a block of the node's to be copied. Doubling step d (partner
            // v ^ d) fills the blocks this rank sent to that same partner in
            // the halving step of distance d. Before they can arrive, the
            // partner must have finished halving, so it must have received
            // those blocks whole: by then this rank has written them for the
            // last time (its folds come before it sends them), and the
            // transport has read them out (lent or copied).
            int lo = 0, hi = p2;
            std::vector<net::landing> landed;
            if constexpr (in_place) {
                landed.reserve(static_cast<std::size_t>(rounds));
                int l = v;  // the window's low end, from block v (what halving leaves), as doubling grows it
                for (int d = 1, s = 1 + rounds; d < p2; d *= 2, ++s) {
                    const int plo = l ^ d, phi = plo + d;
                    landed.push_back(detail::land(
                        comm, rank_of(v ^ d), t.step(static_cast<std::uint8_t>(s)),
                        std::span<E>(value.data() + edge(plo), static_cast<std::size_t>(edge(phi) - edge(plo)))));
                    l = std::min(l, plo);
                }
            }
            std::uint8_t step = 1;
            for (int d = p2 / 2; d >= 1; d /= 2, ++step) {  // reduce_scatter: halve the window
                const int partner = v ^ d, mid = (lo + hi) / 2;
                const bool keep_low = v < partner;
                send_blocks(rank_of(partner), t.step(step), keep_low ? mid : lo, keep_low ? hi : mid);
                if (keep_low) hi = mid;
                else lo = mid;
                if constexpr (in_place) {
                    receive_view<E>(comm, rank_of(partner), t.step(step), [&](std::span<const E> got) {
                        expect_length(got.size(), lo, hi, rank_of(partner));
                        std::span<E> mine(value.data() + edge(lo), got.size());
                        if (keep_low) op.fold_into(mine, got.begin());  // the lower ranks' part first
                        else op.fold_before(mine, got.begin());
                    });
                } else {
                    const T got = comm.template receive<T>(rank_of(partner), t.step(step));
                    expect_length(got.size(), lo, hi, rank_of(partner));
                    T mine(value.begin() + edge(lo), value.begin() + edge(hi));
                    detail::combine_into(op, mine, got, !keep_low);
                    std::copy(mine.begin(), mine.end(), value.begin() + edge(lo));
                }
            }
            book.settle();
            for (int d = 1; d < p2; d *= 2, ++step) {  // allgather: double it
                const int partner = v ^ d, plo = lo ^ d, phi = plo + d;
                send_blocks(rank_of(partner), t.step(step), lo, hi);
                auto place = [&](const auto& got) {
                    expect_length(got.size(), plo, phi, rank_of(partner));
                    detail::copy_unless_landed(got, value.begin() + edge(plo));
                };
                if constexpr (in_place) receive_view<E>(comm, rank_of(partner), t.step(step), place);
                else place(comm.template receive<T>(rank_of(partner), t.step(step)));
                lo = std::min(lo, plo), hi = std::max(hi, phi);
            }
            landed.clear();
            if (me < 2 * extra) send_blocks(me - 1, t.step(step), 0, p2);
            book.settle();
            return value;
        }
    }
};
inline constexpr guarded_algorithm<allreduce_rabenseifner_fn> allreduce_rabenseifner{};

struct allreduce_shared_memory_fn {
    static constexpr algorithm_info info{
        .collective = "allreduce", .name = "shared_memory", .code = 5, .needs_shared_memory = true};

    // Vectors from this many elements (with a built-in op): each rank folds
    // one block of the result (1/n of the work) and the ranks copy each
    // other's blocks at a second meeting, instead of every rank folding all
    // n vectors whole. Decided on rank 0's length, which every rank reads,
    // so all ranks take the same path.
    static constexpr std::size_t shared_blocks_from = 4096;

    template <class C, class T, class Op>
    T operator()(C& comm, T value, const Op& op, stream s = {}) const {
        shared_board* board = detail::board_of(comm, s);
        if (board == nullptr) return allreduce_reduce_broadcast_fn{}(comm, std::move(value), op, s);
        detail::begin_call(comm, info, s);  // the steps below draw their own tags
        const int me = comm.rank();
        bool by_blocks = false;
        const detail::call_args args{.op = detail::op_id<Op>()};
        value = board->meet(me, info.collective, true, value, [&](const auto& parts) {
            if constexpr (detail::folds_in_place<Op, T>) {
                if (parts[0].size() >= shared_blocks_from) {
                    by_blocks = true;
                    fold_my_block(parts, me, value, op);
                    return std::move(value);
                }
            }
            detail::fold_in_rank_order(op, value, parts);  // no allocation for a vector of the same length
            return std::move(value);
        }, args);
        if constexpr (detail::folds_in_place<Op, T>) {
            if (by_blocks) {
                return board->meet(me, info.collective, true, value, [&](const auto& parts) {
                    for (std::size_t i = 0; i < parts.size(); ++i) {
                        if (i == static_cast<std::size_t>(me)) continue;
                        const auto [lo, hi] = block(value.size(), parts.size(), i);
                        std::copy(parts[i].begin() + lo, parts[i].begin() + hi, value.begin() + lo);
                    }
                    return std::move(value);
                });
            }
        }
        return value;
    }

private:
    // Elements [first, second) of a vector of `length` are rank r's block.
    static std::pair<std::ptrdiff_t, std::ptrdiff_t> block(std::size_t length, std::size_t n, std::size_t r) {
        return {static_cast<std::ptrdiff_t>(length * r / n), static_cast<std::ptrdiff_t>(length * (r + 1) / n)};
    }

    // Rank me's block of the fold of every part, in rank order, into value.
    template <class Parts, class T, class Op>
    static void fold_my_block(const Parts& parts, int me, T& value, const Op& op) {
        const std::size_t length = parts[0].size();
        for (std::size_t i = 1; i < parts.size(); ++i)
            detail::check_same_length<detail::agreed_error>(length, parts[i].size());  // at every rank alike
        const auto [lo, hi] = block(length, parts.size(), static_cast<std::size_t>(me));
        T mine(parts[0].begin() + lo, parts[0].begin() + hi);
        for (std::size_t i = 1; i < parts.size(); ++i) op.fold_into(mine, parts[i].begin() + lo);
        std::copy(mine.begin(), mine.end(), value.begin() + lo);
    }
};
inline constexpr guarded_algorithm<allreduce_shared_memory_fn> allreduce_shared_memory{};


struct allreduce_host_memory_fn {
    static constexpr algorithm_info info{
        .collective = "allreduce", .name = "host_memory", .code = 6, .needs_host_level = true};

    template <class C, class T, class Op>
    T operator()(C& comm, T value, const Op& op, stream s = {}) const {
        if constexpr (detail::host_board_value<T> && requires(tag t) { comm.board_on_host(s, t); }) {
            if (const auto meeting = detail::meet_on_host(comm, s, info, host_board::type_of<T>(),
                                                          detail::bytes_of(value), {.op = detail::op_id<Op>()})) {
                const auto [board, m] = *meeting;
                if (detail::all_fit<T>(*board, m, comm.rank(), info)) return fold<T>(*board, m, op);
                // Some rank's value did not fit in its part: all ranks saw
                // it, and that all values have one length.
                if constexpr (detail::element_vector<T> && detail::folds_in_place<Op, T> &&
                              requires(tag u) { comm.large_board_on_host(s, u); }) {
                    const tag u = comm.next_tag(s);
                    if (host_board* large = comm.large_board_on_host(s, u))
                        return in_blocks(comm, *large, u, std::move(value), op, everyone);
                }
            }
        }
        return allreduce_butterfly_fn{}(comm, std::move(value), op, s);
    }

private:
    friend struct reduce_host_memory_fn;  // the same steps, the result at one rank

    // in_blocks' `wanted_at`: every rank wants the result.
    static constexpr int everyone = -1;

    // Every part in rank order, from the shared bytes: the same value at
    // every rank, whatever the op.
    template <class T, class Op>
    static T fold(const host_board& board, std::uint64_t m, const Op& op) {
        auto value_of = [&](int q) {
            const auto p = board.part_of(m, q);
            if constexpr (detail::element_vector<T>) {
                using E = typename T::value_type;
                const auto* first = reinterpret_cast<const E*>(p.data);
                return std::span<const E>(first, p.bytes / sizeof(E));
            } else {
                T v;
                std::memcpy(&v, p.data, sizeof v);
                return v;
            }
        };
        if constexpr (detail::element_vector<T>) {
            const auto first = value_of(0);
            T acc(first.begin(), first.end());
            for (int q = 1; q < board.size(); ++q) {
                const auto part = value_of(q);
                if constexpr (detail::folds_in_place<Op, T>) op.fold_into(acc, part.begin());
                else detail::combine_into(op, acc, T(part.begin(), part.end()), false);
            }
            return acc;
        } else {
            T acc = value_of(0);
            for (int q = 1; q < board.size(); ++q) detail::combine_into(op, acc, value_of(q), false);
            return acc;
        }
    }

    // A vector larger than a part of the default board, on a large board
    // (host_board::large_shape): cut into chunks of a part each, chunk j
    // passed at the j-th meeting. Rank q folds block q of every chunk (its
    // 1/n of the work) in rank order into its own part, where it never
    // copied its own block in (the fold reads that from its vector: nobody
    // else needs it), then into its vector; after the next meeting every
    // rank copies the other blocks out. So one meeting per chunk, plus one:
    // folding chunk j - 1 overlaps passing chunk j. A part of meeting m is
    // read until the rank arrives at m + 2, which the board's three sets
    // allow; a rank writes its part of meeting m + 1 (the set of m - 2)
    // once m has completed, as arrive() would. With `wanted_at` a rank
    // (a reduce's root), the other ranks fold their blocks all the same but
    // copy nothing out: their vectors come back as they were.
    template <class C, class T, class Op>
    static T in_blocks(C& comm, host_board& board, tag t, T value, const Op& op, int wanted_at) {
        using E = typename T::value_type;
        const std::size_t n = static_cast<std::size_t>(board.size()), me = static_cast<std::size_t>(comm.rank());
        const bool wanted = wanted_at == everyone || wanted_at == comm.rank();
        // As few chunks as fit in a part each, of equal length (within one
        // element), so that the last one is not a sliver.
        const std::size_t length = value.size(), most = board.capacity() / sizeof(E);
        const std::size_t fewest = (length + most - 1) / most;
        const std::size_t per_chunk = (length + fewest - 1) / fewest;
        const std::size_t chunks = (length + per_chunk - 1) / per_chunk;
        auto block = [n](std::size_t count, std::size_t r) { return std::pair(count * r / n, count * (r + 1) / n); };
        auto part = [&](std::uint64_t m, std::size_t q) {
            return reinterpret_cast<const E*>(board.part_of(m, static_cast<int>(q)).data);
        };
        std::uint64_t last = 0;  // the meeting of chunk j - 1
        for (std::size_t j = 0; j <= chunks; ++j) {
            const std::size_t first = j * per_chunk;
            const std::size_t count = j < chunks ? std::min(per_chunk, length - first) : 0;
            const std::size_t last_first = j > 0 ? first - per_chunk : 0;
            const std::size_t last_count = j > 0 ? std::min(per_chunk, length - last_first) : 0;
            if (j > 0) {
                const auto [lo, hi] = block(last_count, me);
                E* const in_vector = value.data() + last_first + lo;  // still this rank's contribution
                auto from = [&](std::size_t q) -> const E* { return q == me ? in_vector : part(last, q) + lo; };
                std::span<E> acc(reinterpret_cast<E*>(board.own_part(last)) + lo, hi - lo);
                std::copy(from(0), from(0) + acc.size(), acc.begin());
                for (std::size_t q = 1; q < n; ++q) op.fold_into(acc, from(q));
                if (wanted) std::copy(acc.begin(), acc.end(), in_vector);
            }
            if (count > 0) {
                const auto [lo, hi] = block(count, me);
                E* const into = reinterpret_cast<E*>(board.own_part(board.meetings() + 1));
                const E* const chunk = value.data() + first;
                std::copy(chunk, chunk + lo, into);
                std::copy(chunk + hi, chunk + count, into + hi);
            }
            const std::uint64_t m = board.arrive(host_board::type_of<T>(), {});
            board.wait(comm, t, m);
            if (j > 0 && wanted) {
                for (std::size_t q = 0; q < n; ++q) {
                    if (q == me) continue;
                    const auto [lo, hi] = block(last_count, q);
                    std::copy(part(last, q) + lo, part(last, q) + hi,
                              value.begin() + static_cast<std::ptrdiff_t>(last_first + lo));
                }
            }
            last = m;
        }
        return value;
    }
};
inline constexpr guarded_algorithm<allreduce_host_memory_fn> allreduce_host_memory{};

// A reduce on the host board (reduce.hpp lists the message algorithms): the
// allreduce's meeting and, for a vector over a part, its chunks, where
// every rank still folds its block of each chunk (the work stays spread)
// but only the root copies the result out. Every rank waits for every
// meeting: a part is rewritten only once all ranks have been through the
// meeting after the one that read it. Other values and communicators: the
// binomial tree.
struct reduce_host_memory_fn {
    static constexpr algorithm_info info{
        .collective = "reduce", .name = "host_memory", .code = 8, .needs_host_level = true};

    template <class C, class T, class Op>
    std::optional<T> operator()(C& comm, T value, const Op& op, int root = 0, stream s = {}) const {
        using host = allreduce_host_memory_fn;
        if constexpr (detail::host_board_value<T> && requires(tag t) { comm.board_on_host(s, t); }) {
            topology::check(comm.rank(), comm.size(), root);
            if (const auto meeting =
                    detail::meet_on_host(comm, s, info, host_board::type_of<T>(), detail::bytes_of(value),
                                         {.root = root, .op = detail::op_id<Op>()})) {
                const auto [board, m] = *meeting;
                const bool is_root = comm.rank() == root;
                if (detail::all_fit<T>(*board, m, comm.rank(), info)) {
                    if (is_root) return host::fold<T>(*board, m, op);
                    return std::nullopt;
                }
                if constexpr (detail::element_vector<T> && detail::folds_in_place<Op, T> &&
                              requires(tag u) { comm.large_board_on_host(s, u); }) {
                    const tag u = comm.next_tag(s);
                    if (host_board* large = comm.large_board_on_host(s, u)) {
                        T result = host::in_blocks(comm, *large, u, std::move(value), op, root);
                        if (is_root) return result;
                        return std::nullopt;
                    }
                }
            }
        }
        return reduce_binomial_fn{}(comm, std::move(value), op, root, s);
    }
};
inline constexpr guarded_algorithm<reduce_host_memory_fn> reduce_host_memory{};

}  // namespace csp::collectives
