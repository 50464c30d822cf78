#pragma once
// Barrier: no rank leaves before every rank has entered.
//
// The messages carry one byte and no meaning.
//
//   sequential  everyone sends to rank 0 and waits for its reply; rank 0
//               receives from 1, 2, ... in turn, then replies to each
//               (listing 9). 2(n-1) messages through rank 0.
//   linear      as sequential, but rank 0 receives from all at once
//               (listing 10).
//   binomial    each rank receives from its children at once, then (not
//               the root) sends to its parent and waits for the release,
//               then releases its children (listing 11). 2(n-1) messages,
//               2 ceil(log2 n) rounds.
//   dissemination  no coordinator: in round k each rank sends to rank
//               me + 2^k and waits for rank me - 2^k (mod n). After round
//               k a rank has heard, directly or through others, from the
//               2^(k+1) - 1 ranks before it, so after ceil(log2 n) rounds
//               from all. n ceil(log2 n) messages, ceil(log2 n) rounds:
//               at 2 ranks one crossing instead of a round trip.
//   shared_memory  ranks of one address space (shared_board.hpp): one sync
//               on the board's barrier, no messages. Elsewhere it runs
//               binomial.
#include <cstdint>
#include <vector>

#include "collectives/algorithm.hpp"
#include "collectives/communicator.hpp"
#include "collectives/detail/host_meeting.hpp"
#include "collectives/detail/peers.hpp"
#include "collectives/shared_board.hpp"
#include "collectives/topology.hpp"
#include "collectives/revocation.hpp"

namespace csp::collectives {

namespace detail {
using barrier_token = std::uint8_t;

// A non-root rank of the linear barriers: enter, wait for the release.
template <class C>
void enter_via_zero(C& comm, tag t) {
    comm.send(0, t, barrier_token{});
    comm.template receive<barrier_token>(0, t);
}

template <class C>
std::vector<int> all_but_zero(const C& comm) {
    std::vector<int> v;
    for (int r = 1; r < comm.size(); ++r) v.push_back(r);
    return v;
}
}  // namespace detail

struct barrier_flat_sequential_fn {
    static constexpr algorithm_info info{.collective = "barrier", .name = "flat_sequential", .code = 1};

    template <class C>
    void operator()(C& comm, stream s = {}) const {
        const tag t = detail::begin_call(comm, info, s);
        if (comm.rank() != 0) return detail::enter_via_zero(comm, t);
        for (int r = 1; r < comm.size(); ++r) comm.template receive<detail::barrier_token>(r, t);
        for (int r = 1; r < comm.size(); ++r) comm.send(r, t, detail::barrier_token{});
    }
};
inline constexpr guarded_algorithm<barrier_flat_sequential_fn> barrier_flat_sequential{};

struct barrier_flat_parallel_fn {
    static constexpr algorithm_info info{.collective = "barrier", .name = "flat_parallel", .code = 2};

    template <class C>
    void operator()(C& comm, stream s = {}) const {
        const tag t = detail::begin_call(comm, info, s);
        if (comm.rank() != 0) return detail::enter_via_zero(comm, t);
        const auto others = detail::all_but_zero(comm);
        if (others.empty()) return;
        detail::receive_from_each<detail::barrier_token>(comm, others, t);
        detail::send_to_each(comm, others, t, detail::barrier_token{});
    }
};
inline constexpr guarded_algorithm<barrier_flat_parallel_fn> barrier_flat_parallel{};

struct barrier_binomial_fn {
    static constexpr algorithm_info info{.collective = "barrier", .name = "binomial", .code = 3};

    template <class C>
    void operator()(C& comm, stream s = {}) const {
        const tag t = detail::begin_call(comm, info, s);
        const auto children = topology::binomial_children(comm.rank(), comm.size(), 0);
        if (!children.empty()) detail::receive_from_each<detail::barrier_token>(comm, children, t);
        if (int parent = topology::binomial_parent(comm.rank(), comm.size(), 0); parent >= 0) {
            comm.send(parent, t, detail::barrier_token{});
            comm.template receive<detail::barrier_token>(parent, t);
        }
        detail::send_to_each(comm, children, t, detail::barrier_token{});
    }
};
inline constexpr guarded_algorithm<barrier_binomial_fn> barrier_binomial{};

struct barrier_dissemination_fn {
    static constexpr algorithm_info info{.collective = "barrier", .name = "dissemination", .code = 4};

    template <class C>
    void operator()(C& comm, stream s = {}) const {
        const tag t = detail::begin_call(comm, info, s);
        const int n = comm.size(), me = comm.rank();
        std::uint8_t round = 0;
        for (int d = 1; d < n; d *= 2, ++round) {
            comm.send((me + d) % n, t.step(round), detail::barrier_token{});
            comm.template receive<detail::barrier_token>((me - d + n) % n, t.step(round));
        }
    }
};
inline constexpr guarded_algorithm<barrier_dissemination_fn> barrier_dissemination{};

struct barrier_shared_memory_fn {
    static constexpr algorithm_info info{
        .collective = "barrier", .name = "shared_memory", .code = 5, .needs_shared_memory = true};

    template <class C>
    void operator()(C& comm, stream s = {}) const {
        shared_board* board = detail::board_of(comm, s);
        if (board == nullptr) return barrier_binomial_fn{}(comm, s);
        detail::begin_call(comm, info, s);  // the steps below draw their own tags
        board->meet(comm.rank(), info.collective, false, detail::barrier_token{}, [](const auto&) { return 0; });
    }
};
inline constexpr guarded_algorithm<barrier_shared_memory_fn> barrier_shared_memory{};

// OS processes of one host (a net_communicator whose ranks share this
// host's memory): one meeting on the host board (host_board.hpp), no
// message unless a rank waits long enough to sleep. Elsewhere binomial.
struct barrier_host_memory_fn {
    static constexpr algorithm_info info{
        .collective = "barrier", .name = "host_memory", .code = 6, .needs_host_level = true};

    template <class C>
    void operator()(C& comm, stream s = {}) const {
        if constexpr (requires(tag t) { comm.board_on_host(s, t); }) {
            if (detail::meet_on_host(comm, s, info, 0, {})) return;
        }
        barrier_binomial_fn{}(comm, s);
    }
};
inline constexpr guarded_algorithm<barrier_host_memory_fn> barrier_host_memory{};

}  // namespace csp::collectives
