#pragma once
// The registry: every collective algorithm there is, by collective, listed
// once. Dispatch (dispatch.hpp), the selection table (selection.hpp),
// csp-model --list, the tests' grids and the benchmarks iterate these lists,
// so adding an algorithm is its own file (a function object with an `info`,
// algorithm.hpp) plus one line below.
//
//   registry::reduce::for_each([&](auto algorithm) { algorithm(comm, x, sum{}, root); });
//   registry::reduce::run("chain", comm, x, sum{}, root);
#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "collectives/algorithm.hpp"
#include "collectives/allgather.hpp"
#include "collectives/allreduce.hpp"
#include "collectives/alltoall.hpp"
#include "collectives/barrier.hpp"
#include "collectives/broadcast.hpp"
#include "collectives/exchange.hpp"
#include "collectives/gather.hpp"
#include "collectives/reduce.hpp"
#include "collectives/reduce_scatter.hpp"
#include "collectives/scan.hpp"
#include "collectives/scatter.hpp"
#include "collectives/two_levels.hpp"
#include "csp/error.hpp"

namespace csp::collectives {

// The algorithms of one collective. Every algorithm of a list takes the
// same arguments and returns the same type. The list holds the unguarded
// algorithm types: dispatch runs them inside its own guard, where the
// objects a program calls by name (guarded_algorithm, revocation.hpp) guard
// themselves.
template <class... A>
struct algorithm_list {
    static constexpr std::array<algorithm_info, sizeof...(A)> infos{A::info...};

    // An algorithm's code is its place in the list, from 1, in a tag's four
    // algorithm bits (tag.hpp); code 15 is left for an algorithm outside
    // the registry (aspen_reduce.hpp).
    static constexpr bool codes_are_places() {
        for (std::size_t i = 0; i < infos.size(); ++i)
            if (infos[i].code != i + 1 || infos[i].collective != infos[0].collective) return false;
        return infos.size() < 15;
    }
    static_assert(codes_are_places(), "an algorithm's info.code must be its place in its registry list, from 1");

    // Calls f(algorithm) for each, in registration order.
    template <class F>
    static void for_each(F&& f) {
        (f(A{}), ...);
    }

    // Runs the algorithm called `name`; usage_error if there is none.
    template <class... Args>
    static decltype(auto) run(std::string_view name, Args&&... args) {
        return run_named<A...>(name, std::forward<Args>(args)...);
    }

private:
    template <class First, class... Rest, class... Args>
    static decltype(auto) run_named(std::string_view name, Args&&... args) {
        if (First::info.name == name) return First{}(std::forward<Args>(args)...);
        if constexpr (sizeof...(Rest) > 0) return run_named<Rest...>(name, std::forward<Args>(args)...);
        else
            throw usage_error("no " + std::string(First::info.collective) + " algorithm \"" + std::string(name) + "\"");
    }
};

namespace registry {

using broadcast = algorithm_list<broadcast_flat_fn, broadcast_binomial_fn, broadcast_pipeline_fn,
                                 broadcast_shared_memory_fn, broadcast_host_memory_fn>;
using reduce = algorithm_list<reduce_flat_in_order_fn, reduce_binomial_fn, reduce_binomial_parallel_fn, reduce_chain_fn,
                              reduce_arrival_fn, reduce_pipeline_fn, reduce_shared_memory_fn, reduce_host_memory_fn,
                              reduce_two_levels_fn>;
using allreduce = algorithm_list<allreduce_reduce_broadcast_fn, allreduce_butterfly_fn, allreduce_ring_fn,
                                 allreduce_rabenseifner_fn, allreduce_shared_memory_fn, allreduce_host_memory_fn,
                                 allreduce_two_levels_fn>;
using barrier = algorithm_list<barrier_flat_sequential_fn, barrier_flat_parallel_fn, barrier_binomial_fn,
                               barrier_dissemination_fn, barrier_shared_memory_fn, barrier_host_memory_fn,
                               barrier_two_levels_fn>;
using gather = algorithm_list<gather_sequential_fn, gather_parallel_fn, gather_two_levels_fn>;
using allgather =
    algorithm_list<allgather_gather_broadcast_fn, allgather_ring_fn, allgather_host_memory_fn, allgather_two_levels_fn>;
using scatter = algorithm_list<scatter_sequential_fn, scatter_parallel_fn>;
using alltoall = algorithm_list<alltoall_parallel_fn>;
using scan = algorithm_list<scan_recursive_doubling_fn, scan_pipeline_fn, scan_host_memory_fn>;
using exscan = algorithm_list<exscan_recursive_doubling_fn, exscan_pipeline_fn, exscan_host_memory_fn>;
using reduce_scatter =
    algorithm_list<reduce_scatter_reduce_then_scatter_fn, reduce_scatter_ring_fn, reduce_scatter_host_memory_fn>;
using put_get = algorithm_list<put_get_allgather_fn, put_get_requests_fn>;

// Every list, for code that walks all collectives.
template <class F>
void for_each_collective(F&& f) {
    f(broadcast{}), f(reduce{}), f(allreduce{}), f(barrier{}), f(gather{});
    f(allgather{}), f(scatter{}), f(alltoall{}), f(scan{}), f(exscan{});
    f(reduce_scatter{}), f(put_get{});
}

namespace detail {
template <std::size_t... N>
constexpr auto concat(const std::array<algorithm_info, N>&... parts) {
    std::array<algorithm_info, (N + ...)> out{};
    std::size_t i = 0;
    ((std::copy(parts.begin(), parts.end(), out.begin() + i), i += N), ...);
    return out;
}
}  // namespace detail

// Every algorithm's description, by collective.
inline constexpr auto every_algorithm =
    detail::concat(broadcast::infos, reduce::infos, allreduce::infos, barrier::infos, gather::infos,
                   allgather::infos, scatter::infos, alltoall::infos, scan::infos, exscan::infos, reduce_scatter::infos,
                   put_get::infos);

}  // namespace registry
}  // namespace csp::collectives
