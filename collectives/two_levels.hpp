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
// the hierarchy (allreduce_in_two_levels, barrier_in_two_levels, ...): a
// program whose communicator has levels has included both.
#include <optional>
#include <utility>
#include <vector>

#include "collectives/algorithm.hpp"
#include "collectives/allgather.hpp"
#include "collectives/allreduce.hpp"
#include "collectives/barrier.hpp"
#include "collectives/communicator.hpp"
#include "collectives/context_pool.hpp"
#include "collectives/gather.hpp"
#include "collectives/reduce.hpp"
#include "collectives/revocation.hpp"
#include "collectives/tag.hpp"

namespace csp::collectives {

namespace detail {
// comm's levels for a call of stream s, or nullptr: the one place that says
// when a call may run on them, so the table's request and the algorithm
// agree.
template <class C>
auto* levels_of(const C& comm, stream s) {
    if constexpr (requires { comm.two_levels(); })
        return s.id < context_pool::streams_per_context ? comm.two_levels() : nullptr;
    else return static_cast<void*>(nullptr);
}

// Whether comm has levels for a call of stream s (the table's request,
// dispatch.hpp).
template <class C>
bool has_two_levels(const C& comm, stream s) {
    return levels_of(comm, s) != nullptr;
}

// levels_of, and a call that runs on them is announced to a tracing
// communicator with the tag the whole communicator's next call would draw
// (this one draws none of it).
template <class C>
auto* levels_for(C& comm, const algorithm_info& a, stream s) {
    auto* levels = levels_of(comm, s);
    if constexpr (has_upcoming_tag<C>)
        if (levels) announce(comm, a, marked(comm.upcoming_tag(s), a));
    return levels;
}

// Runs `on_levels(levels)` where comm has levels for stream s, else
// `flat()`: each algorithm below names its step on the levels (an ADL hook
// of hierarchy.hpp) and the flat algorithm it stands in for.
template <class C, class OnLevels, class Flat>
decltype(auto) on_levels_or(C& comm, const algorithm_info& a, stream s, OnLevels on_levels, Flat flat) {
    if constexpr (requires { comm.two_levels(); })
        if (auto* levels = levels_for(comm, a, s)) return on_levels(*levels);
    return flat();
}
}  // namespace detail

struct allreduce_two_levels_fn {
    static constexpr algorithm_info info{
        .collective = "allreduce", .name = "two_levels", .code = 7, .needs_two_levels = true};

    template <class C, class T, class Op>
    T operator()(C& comm, T value, const Op& op, stream s = {}) const {
        return detail::on_levels_or(
            comm, info, s, [&](auto& h) { return allreduce_in_two_levels(h, std::move(value), op, s); },
            [&] { return allreduce_butterfly_fn{}(comm, std::move(value), op, s); });
    }
};
inline constexpr guarded_algorithm<allreduce_two_levels_fn> allreduce_two_levels{};

struct barrier_two_levels_fn {
    static constexpr algorithm_info info{
        .collective = "barrier", .name = "two_levels", .code = 7, .needs_two_levels = true};

    template <class C>
    void operator()(C& comm, stream s = {}) const {
        detail::on_levels_or(
            comm, info, s, [&](auto& h) { barrier_in_two_levels(h, s); },
            [&] { barrier_dissemination_fn{}(comm, s); });
    }
};
inline constexpr guarded_algorithm<barrier_two_levels_fn> barrier_two_levels{};

// The fold at `root`: each node's at its leader, then the leaders' at the
// root's node's leader, which hands it to the root.
struct reduce_two_levels_fn {
    static constexpr algorithm_info info{
        .collective = "reduce", .name = "two_levels", .code = 9, .needs_two_levels = true};

    template <class C, class T, class Op>
    std::optional<T> operator()(C& comm, T value, const Op& op, int root = 0, stream s = {}) const {
        return detail::on_levels_or(
            comm, info, s, [&](auto& h) { return reduce_in_two_levels(h, std::move(value), op, root, s); },
            [&] { return reduce_binomial_parallel_fn{}(comm, std::move(value), op, root, s); });
    }
};
inline constexpr guarded_algorithm<reduce_two_levels_fn> reduce_two_levels{};

// Every rank's value at `root`: each node's gathered at its leader, the
// leaders' parts at the root's node's leader, the whole to the root.
struct gather_two_levels_fn {
    static constexpr algorithm_info info{
        .collective = "gather", .name = "two_levels", .code = 3, .needs_two_levels = true};

    template <class C, class T>
    std::optional<std::vector<T>> operator()(C& comm, T value, int root = 0, stream s = {}) const {
        return detail::on_levels_or(
            comm, info, s, [&](auto& h) { return gather_in_two_levels(h, std::move(value), root, s); },
            [&] { return gather_parallel_fn{}(comm, std::move(value), root, s); });
    }
};
inline constexpr guarded_algorithm<gather_two_levels_fn> gather_two_levels{};

// Every rank's value at every rank: each node's gathered at its leader, the
// leaders' parts exchanged among them, the whole handed out in each node.
struct allgather_two_levels_fn {
    static constexpr algorithm_info info{
        .collective = "allgather", .name = "two_levels", .code = 4, .needs_two_levels = true};

    template <class C, class T>
    std::vector<T> operator()(C& comm, T value, stream s = {}) const {
        return detail::on_levels_or(
            comm, info, s, [&](auto& h) { return allgather_in_two_levels(h, std::move(value), s); },
            [&] { return allgather_gather_broadcast_fn{}(comm, std::move(value), s); });
    }
};
inline constexpr guarded_algorithm<allgather_two_levels_fn> allgather_two_levels{};

}  // namespace csp::collectives
