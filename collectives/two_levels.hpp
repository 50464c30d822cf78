#pragma once
// The table's two-level algorithms: a communicator that knows which of its
// ranks share a node (a hybrid job: fibers of one process) holds a
// hierarchy of its own (hierarchy.hpp), and for the calls the table gives
// to "two_levels" the ranks of each node fold among themselves first, one
// leader per node runs the flat collective over the network, and each
// leader hands the result to its node's ranks. Plain calls then get what
// cc::hierarchical:: gives a program that makes the hierarchy itself.
//
// A communicator offers its levels through two_levels(), a hierarchy of
// itself or nullptr; on every rank alike, as the table's choice must be.
// Elsewhere the table does not choose these algorithms
// (algorithm_info::needs_two_levels), and called by name they run a flat
// one. A hierarchy's levels take streams below 256 only
// (context_pool.hpp): for a call of a later stream the table chooses as
// without levels.
//
// hierarchy.hpp includes the dispatch and so this header, so the steps are
// reached by argument-dependent lookup of the functions it defines beside
// the hierarchy (allreduce_in_two_levels, barrier_in_two_levels): a program
// whose communicator has levels has included both.
#include <utility>

#include "collectives/algorithm.hpp"
#include "collectives/allreduce.hpp"
#include "collectives/barrier.hpp"
#include "collectives/communicator.hpp"
#include "collectives/context_pool.hpp"
#include "collectives/revocation.hpp"
#include "collectives/tag.hpp"

namespace csp::collectives {

namespace detail {
// comm's levels for a call of stream s, or nullptr. A call that runs on
// them is announced to a tracing communicator with the tag the whole
// communicator's next call would draw (this one draws none of it).
template <class C>
auto* levels_for(C& comm, const algorithm_info& a, stream s) {
    if constexpr (requires { comm.two_levels(); }) {
        auto* levels = s.id < context_pool::streams_per_context ? comm.two_levels() : nullptr;
        if constexpr (has_upcoming_tag<C>)
            if (levels) announce(comm, a, comm.upcoming_tag(s).of_call(call_code(a.collective)));
        return levels;
    } else {
        return static_cast<void*>(nullptr);
    }
}

// Whether comm has levels for a call of stream s (the table's request,
// dispatch.hpp).
template <class C>
bool has_two_levels(const C& comm, stream s) {
    if constexpr (requires { comm.two_levels(); })
        return s.id < context_pool::streams_per_context && comm.two_levels() != nullptr;
    else return false;
}
}  // namespace detail

struct allreduce_two_levels_fn {
    static constexpr algorithm_info info{.collective = "allreduce", .name = "two_levels", .needs_two_levels = true};

    template <class C, class T, class Op>
    T operator()(C& comm, T value, const Op& op, stream s = {}) const {
        if constexpr (requires { comm.two_levels(); })
            if (auto* levels = detail::levels_for(comm, info, s))
                return allreduce_in_two_levels(*levels, std::move(value), op, s);
        return allreduce_butterfly_fn{}(comm, std::move(value), op, s);
    }
};
inline constexpr guarded_algorithm<allreduce_two_levels_fn> allreduce_two_levels{};

struct barrier_two_levels_fn {
    static constexpr algorithm_info info{.collective = "barrier", .name = "two_levels", .needs_two_levels = true};

    template <class C>
    void operator()(C& comm, stream s = {}) const {
        if constexpr (requires { comm.two_levels(); })
            if (auto* levels = detail::levels_for(comm, info, s)) return barrier_in_two_levels(*levels, s);
        barrier_dissemination_fn{}(comm, s);
    }
};
inline constexpr guarded_algorithm<barrier_two_levels_fn> barrier_two_levels{};

}  // namespace csp::collectives
