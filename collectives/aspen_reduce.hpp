#pragma once
// Aspen's reduce: participants P contribute, receivers R get the result, and
// R may include ranks outside P (topology::aspen_schedule has the steps).
//
//   // every rank of the communicator calls it; P and R are the same everywhere
//   std::optional<double> mine = comm.rank() in P ? std::optional(x) : std::nullopt;
//   std::optional<double> r = aspen_reduce(comm, mine, P, R, sum{}, stream{1});
//   // r has a value exactly at the ranks of R
//
// Ranks in neither set return at once. aspen_plan() computes a rank's part
// once, for a reduction that runs many times. Several calls on different streams
// run at the same time on overlapping sets with no communicator per call.
// The op must commute (participants are renumbered).
#include <optional>
#include <utility>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/operation.hpp"
#include "collectives/revocation.hpp"
#include "collectives/schedule.hpp"
#include "collectives/topology.hpp"

namespace csp::collectives {

// One rank's part of an Aspen reduce, computed once for repeated use.
template <class C>
rank_plan aspen_plan(const C& comm, const std::vector<int>& participants, const std::vector<int>& receivers) {
    for (const auto* set : {&participants, &receivers})
        for (int r : *set) detail::check_rank(r, comm.size(), "Aspen reduce:");
    return plan_for(topology::aspen_schedule(participants, receivers), comm.rank());
}

// Not in the registry (registry.hpp): it takes participants and receivers,
// so no plain reduce call can select it. Its code is the last one, which
// the registry's list of reduces cannot reach.
inline constexpr algorithm_info aspen_reduce_info{
    .collective = "reduce", .name = "aspen", .code = 15, .needs_commuting_op = true};

template <class C, class T, class Op>
std::optional<T> aspen_reduce(C& comm, std::optional<T> contribution, const rank_plan& plan, const Op& op,
                              stream s = {}) {
    if (!commutes(op))
        throw usage_error("Aspen's reduce renumbers the participants and needs an op that commutes "
                          "(csp::collectives::commuting(f), or a built-in op)");
    return detail::guarded(comm, s, "reduce", [&] {
        const tag t = detail::begin_call(comm, aspen_reduce_info, s);
        return run_plan(comm, plan, std::move(contribution), op, t);
    });
}

template <class C, class T, class Op>
std::optional<T> aspen_reduce(C& comm, std::optional<T> contribution, const std::vector<int>& participants,
                              const std::vector<int>& receivers, const Op& op, stream s = {}) {
    return aspen_reduce(comm, std::move(contribution), aspen_plan(comm, participants, receivers), op, s);
}

}  // namespace csp::collectives
