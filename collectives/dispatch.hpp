#pragma once
// The collectives by their plain names: each picks its algorithm through the
// selection table (selection.hpp) and runs it.
//
//   double total = csp::collectives::allreduce(comm, x, csp::collectives::sum{});
//   auto at_root = csp::collectives::reduce(comm, x, op, /*root=*/3);   // optional
//
// Calling an algorithm by its own name (reduce_chain, allreduce_butterfly,
// ...) bypasses the table.
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "collectives/allgather.hpp"
#include "collectives/allreduce.hpp"
#include "collectives/alltoall.hpp"
#include "collectives/barrier.hpp"
#include "collectives/broadcast.hpp"
#include "collectives/gather.hpp"
#include "collectives/operation.hpp"
#include "collectives/reduce.hpp"
#include "collectives/scan.hpp"
#include "collectives/scatter.hpp"
#include "collectives/selection.hpp"

namespace csp::collectives {

namespace detail {
template <class C>
std::string_view choose(const C& comm, std::string_view collective, std::size_t bytes = 0, bool commuting = true) {
    return selection::global().choose({collective, comm.size(), bytes, commuting});
}
}  // namespace detail

template <class C, class T>
T broadcast(C& comm, T value, int root = 0, stream s = {}) {
    if (detail::choose(comm, "broadcast") == "linear") return broadcast_linear(comm, std::move(value), root, s);
    return broadcast_binomial(comm, std::move(value), root, s);
}

template <class C, class T, class Op>
std::optional<T> reduce(C& comm, T value, const Op& op, int root = 0, stream s = {}) {
    const auto a = detail::choose(comm, "reduce", detail::byte_size(value), commutes(op));
    if (a == "linear") return reduce_linear(comm, std::move(value), op, root, s);
    if (a == "binomial") return reduce_binomial(comm, std::move(value), op, root, s);
    if (a == "chain") return reduce_chain(comm, std::move(value), op, root, s);
    if (a == "arrival") return reduce_arrival(comm, std::move(value), op, root, s);
    return reduce_binomial_parallel(comm, std::move(value), op, root, s);
}

template <class C, class T, class Op>
T allreduce(C& comm, T value, const Op& op, stream s = {}) {
    if (detail::choose(comm, "allreduce", detail::byte_size(value), commutes(op)) == "reduce_broadcast")
        return allreduce_reduce_broadcast(comm, std::move(value), op, s);
    return allreduce_butterfly(comm, std::move(value), op, s);
}

template <class C>
void barrier(C& comm, stream s = {}) {
    const auto a = detail::choose(comm, "barrier");
    if (a == "sequential") return barrier_sequential(comm, s);
    if (a == "linear") return barrier_linear(comm, s);
    barrier_binomial(comm, s);
}

template <class C, class T>
std::optional<std::vector<T>> gather(C& comm, T value, int root = 0, stream s = {}) {
    if (detail::choose(comm, "gather") == "sequential") return gather_sequential(comm, std::move(value), root, s);
    return gather_parallel(comm, std::move(value), root, s);
}

template <class C, class T>
std::vector<T> allgather(C& comm, T value, stream s = {}) {
    detail::choose(comm, "allgather");
    return allgather_gather_broadcast(comm, std::move(value), s);
}

template <class C, class T>
T scatter(C& comm, std::vector<T> values, int root = 0, stream s = {}) {
    if (detail::choose(comm, "scatter") == "parallel") return scatter_parallel(comm, std::move(values), root, s);
    return scatter_sequential(comm, std::move(values), root, s);
}

template <class C, class T>
std::vector<T> alltoall(C& comm, std::vector<T> values, stream s = {}) {
    detail::choose(comm, "alltoall");
    return alltoall_parallel(comm, std::move(values), s);
}

template <class C, class T, class Op>
T scan(C& comm, T value, const Op& op, stream s = {}) {
    if (detail::choose(comm, "scan", detail::byte_size(value), commutes(op)) == "linear")
        return scan_linear(comm, std::move(value), op, s);
    return scan_recursive_doubling(comm, std::move(value), op, s);
}

template <class C, class T, class Op>
std::optional<T> exscan(C& comm, T value, const Op& op, stream s = {}) {
    if (detail::choose(comm, "exscan", detail::byte_size(value), commutes(op)) == "linear")
        return exscan_linear(comm, std::move(value), op, s);
    return exscan_recursive_doubling(comm, std::move(value), op, s);
}

}  // namespace csp::collectives
