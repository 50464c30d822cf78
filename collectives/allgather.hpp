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

struct allgather_gather_broadcast_fn {
    static constexpr algorithm_info info{"allgather", "gather_broadcast"};

    template <class C, class T>
    std::vector<T> operator()(C& comm, T value, stream s = {}) const {
        const tag t = comm.next_tag(s);
        detail::announce(comm, info, t);
        auto all = gather_parallel(comm, std::move(value), 0, s);
        return broadcast_binomial(comm, all ? std::move(*all) : std::vector<T>{}, 0, s);
    }
};
inline constexpr allgather_gather_broadcast_fn allgather_gather_broadcast{};

}  // namespace csp::collectives
