#pragma once
// Allgather: every rank gets every rank's value, in rank order.
//
//   gather_broadcast  a parallel gather to rank 0, then a binomial broadcast
//                     of the whole vector (listing 15). 2(n-1) messages.
#include <utility>
#include <vector>

#include "collectives/broadcast.hpp"
#include "collectives/gather.hpp"

namespace csp::collectives {

template <class C, class T>
std::vector<T> allgather_gather_broadcast(C& comm, T value, stream s = {}) {
    const tag t = comm.next_tag(s);
    detail::announce(comm, "allgather", "gather_broadcast", t);
    auto all = gather_parallel(comm, std::move(value), 0, s);
    return broadcast_binomial(comm, all ? std::move(*all) : std::vector<T>{}, 0, s);
}

}  // namespace csp::collectives
