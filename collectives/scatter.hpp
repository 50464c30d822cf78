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

#include "collectives/algorithm.hpp"
#include "collectives/communicator.hpp"
#include "collectives/topology.hpp"
#include "collectives/revocation.hpp"
#include "csp/process.hpp"

namespace csp::collectives {

namespace detail {
// Both scatters: the non-roots receive; the root checks its input, hands
// value r to rank r with send_all(comm, values, tag) and keeps its own.
template <class C, class T, class SendAll>
T scatter_with(C& comm, std::vector<T> values, int root, stream s, const algorithm_info& info, SendAll send_all) {
    topology::check(comm.rank(), comm.size(), root);
    const tag t = begin_call(comm, info, s);
    if (comm.rank() != root) return comm.template receive<T>(root, t);
    if (values.size() != static_cast<std::size_t>(comm.size()))
        throw usage_error("scatter: the root holds " + std::to_string(values.size()) + " values for " +
                          std::to_string(comm.size()) + " ranks");
    send_all(comm, values, t);
    return std::move(values[static_cast<std::size_t>(root)]);
}

}  // namespace detail

struct scatter_sequential_fn {
    static constexpr algorithm_info info{.collective = "scatter", .name = "sequential", .code = 1};

    template <class C, class T>
    T operator()(C& comm, std::vector<T> values, int root = 0, stream s = {}) const {
        return detail::scatter_with(comm, std::move(values), root, s, info,
                                    [root](C& c, std::vector<T>& v, tag t) {
                                        for (int r = 0; r < c.size(); ++r)
                                            if (r != root) c.send(r, t, std::move(v[static_cast<std::size_t>(r)]));
                                    });
    }
};
inline constexpr guarded_algorithm<scatter_sequential_fn> scatter_sequential{};

struct scatter_parallel_fn {
    static constexpr algorithm_info info{.collective = "scatter", .name = "parallel", .code = 2};

    template <class C, class T>
    T operator()(C& comm, std::vector<T> values, int root = 0, stream s = {}) const {
        return detail::scatter_with(comm, std::move(values), root, s, info, [root](C& c, std::vector<T>& v, tag t) {
            csp::par_for(v.size(), [&](std::size_t r) {
                if (static_cast<int>(r) != root) c.send(static_cast<int>(r), t, std::move(v[r]));
            });
        });
    }
};
inline constexpr guarded_algorithm<scatter_parallel_fn> scatter_parallel{};

}  // namespace csp::collectives
