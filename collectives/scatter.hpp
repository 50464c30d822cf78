#pragma once
// Scatter: the root holds one value per rank; rank i gets the i-th.
//
// Only the root's `values` are read; it must hold exactly size() values.
//   sequential  the root sends to 0, 1, 2, ... in turn (listing 16).
//   parallel    one sending process per rank (listing 16's scatter_par).
//               Sends only queue, so this differs from sequential in who
//               does the queueing, not in waiting.
// n-1 messages from the root.
#include <utility>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/topology.hpp"
#include "csp/process.hpp"

namespace csp::collectives {

namespace detail {
template <class C, class T>
void check_scatter_input(const C& comm, const std::vector<T>& values) {
    if (values.size() != static_cast<std::size_t>(comm.size()))
        throw usage_error("scatter: the root holds " + std::to_string(values.size()) + " values for " +
                          std::to_string(comm.size()) + " ranks");
}
}  // namespace detail

template <class C, class T>
T scatter_sequential(C& comm, std::vector<T> values, int root = 0, stream s = {}) {
    topology::check(comm.rank(), comm.size(), root);
    const tag t = comm.next_tag(s);
    detail::announce(comm, "scatter", "sequential", t);
    if (comm.rank() != root) return comm.template receive<T>(root, t);
    detail::check_scatter_input(comm, values);
    for (int r = 0; r < comm.size(); ++r)
        if (r != root) comm.send(r, t, std::move(values[static_cast<std::size_t>(r)]));
    return std::move(values[static_cast<std::size_t>(root)]);
}

template <class C, class T>
T scatter_parallel(C& comm, std::vector<T> values, int root = 0, stream s = {}) {
    topology::check(comm.rank(), comm.size(), root);
    const tag t = comm.next_tag(s);
    detail::announce(comm, "scatter", "parallel", t);
    if (comm.rank() != root) return comm.template receive<T>(root, t);
    detail::check_scatter_input(comm, values);
    csp::par_for(values.size(), [&](std::size_t r) {
        if (static_cast<int>(r) != root) comm.send(static_cast<int>(r), t, std::move(values[r]));
    });
    return std::move(values[static_cast<std::size_t>(root)]);
}

}  // namespace csp::collectives
