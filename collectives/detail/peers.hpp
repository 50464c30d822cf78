#pragma once
// The two shapes every algorithm is made of: send one value to several peers,
// and receive from several peers at once.
#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/operation.hpp"
#include "csp/process.hpp"

namespace csp::collectives::detail {

// Sends never block (they queue at the receiver), so one process sends to
// each peer in turn; the order is the peers' order. Net and hybrid
// communicators encode the value once and send every peer the same bytes;
// any other sends each a copy.
template <class C, class T>
void send_to_each(C& comm, std::span<const int> peers, tag t, const T& value) {
    if constexpr (requires { comm.send_each(peers, t, value); }) {
        comm.send_each(peers, t, value);
    } else {
        for (int p : peers) comm.send(p, t, value);
    }
}

// The paper's recv_from_multiple: one receiving process per peer, so a late
// peer holds up only its own receive. Values come back in the peers' order.
// `rank_of` maps an element of `peers` to its rank.
template <class T, class C, class Peers, class RankOf = std::identity>
std::vector<T> receive_from_each(C& comm, const Peers& peers, tag t, RankOf rank_of = {}) {
    if (peers.size() == 1) return {comm.template receive<T>(rank_of(peers[0]), t)};
    return csp::par_for(peers.size(), [&](std::size_t i) { return comm.template receive<T>(rank_of(peers[i]), t); });
}

// Folds `parts` onto `acc` in order: acc op parts[0] op parts[1] ...
// (Read through const: a vector<bool>'s elements are then plain bools.)
template <class T, class Op>
T fold_after(T acc, const std::vector<T>& parts, const Op& op) {
    for (const auto& p : parts) combine_into(op, acc, p, false);
    return acc;
}

}  // namespace csp::collectives::detail
