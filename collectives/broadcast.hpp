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
#include <utility>
#include <vector>

#include "collectives/algorithm.hpp"
#include "collectives/communicator.hpp"
#include "collectives/detail/peers.hpp"
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
        for (int r = 0; r < comm.size(); ++r)
            if (r != root) comm.send(r, t, value);
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
        if (parent >= 0) value = comm.template receive<T>(parent, t);
        // Largest subtree first: it has the longest way to go.
        auto children = topology::binomial_children(comm.rank(), comm.size(), root);
        for (auto it = children.rbegin(); it != children.rend(); ++it) comm.send(*it, t, value);
        return value;
    }
};
inline constexpr broadcast_binomial_fn broadcast_binomial{};

}  // namespace csp::collectives
