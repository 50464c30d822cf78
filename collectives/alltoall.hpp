#pragma once
// Alltoall: rank i sends its j-th value to rank j; rank j gets, in rank
// order, the j-th value of every rank.
//
//   parallel  each rank queues its sends, then receives from every other
//             rank at once (listing 17; OpenMPI posts its receives first,
//             which queued sends make unnecessary). n(n-1) messages.
#include <utility>
#include <vector>

#include "collectives/algorithm.hpp"
#include "collectives/communicator.hpp"
#include "collectives/detail/peers.hpp"
#include "collectives/gather.hpp"
#include "collectives/revocation.hpp"

namespace csp::collectives {

struct alltoall_parallel_fn {
    static constexpr algorithm_info info{.collective = "alltoall", .name = "parallel", .code = 1};

    template <class C, class T>
    std::vector<T> operator()(C& comm, std::vector<T> values, stream s = {}) const {
        if (values.size() != static_cast<std::size_t>(comm.size()))
            throw usage_error("alltoall: rank " + std::to_string(comm.rank()) + " gave " +
                              std::to_string(values.size()) + " values for " + std::to_string(comm.size()) + " ranks");
        const tag t = detail::begin_call(comm, info, s);
        const auto others = detail::all_but(comm, comm.rank());
        for (int r : others) comm.send(r, t, std::move(values[static_cast<std::size_t>(r)]));
        std::vector<T> got = others.empty() ? std::vector<T>{} : detail::receive_from_each<T>(comm, others, t);
        got.insert(got.begin() + comm.rank(), std::move(values[static_cast<std::size_t>(comm.rank())]));
        return got;
    }
};
inline constexpr guarded_algorithm<alltoall_parallel_fn> alltoall_parallel{};

}  // namespace csp::collectives
