#pragma once
// Gather: the root gets every rank's value, in rank order; the others get
// nothing.
//
//   sequential  the root receives from 0, 1, 2, ... in turn (listing 13).
//   parallel    the root receives from all at once, one process each
//               (listing 14).
// n-1 messages into the root either way.
#include <optional>
#include <utility>
#include <vector>

#include "collectives/algorithm.hpp"
#include "collectives/communicator.hpp"
#include "collectives/detail/peers.hpp"
#include "collectives/topology.hpp"
#include "collectives/revocation.hpp"

namespace csp::collectives {

namespace detail {
template <class C>
std::vector<int> all_but(const C& comm, int skip) {
    std::vector<int> v;
    for (int r = 0; r < comm.size(); ++r)
        if (r != skip) v.push_back(r);
    return v;
}
}  // namespace detail

namespace detail {

// Both gathers: the non-roots send; the root collects the others' values in
// rank order with receive(comm, others, tag) and puts its own in its place.
template <class C, class T, class Receive>
std::optional<std::vector<T>> gather_with(C& comm, T value, int root, stream s, const algorithm_info& info,
                                          Receive receive) {
    topology::check(comm.rank(), comm.size(), root);
    const tag t = begin_call(comm, info, s);
    if (comm.rank() != root) {
        comm.send(root, t, std::move(value));
        return std::nullopt;
    }
    const auto others = all_but(comm, root);
    std::vector<T> all = others.empty() ? std::vector<T>{} : receive(comm, others, t);
    all.insert(all.begin() + root, std::move(value));
    return all;
}

}  // namespace detail

struct gather_sequential_fn {
    static constexpr algorithm_info info{.collective = "gather", .name = "sequential", .code = 1};

    template <class C, class T>
    std::optional<std::vector<T>> operator()(C& comm, T value, int root = 0, stream s = {}) const {
        return detail::gather_with(comm, std::move(value), root, s, info,
                                   [](C& c, const std::vector<int>& others, tag t) {
                                       std::vector<T> got;
                                       got.reserve(others.size());
                                       for (int r : others) got.push_back(c.template receive<T>(r, t));
                                       return got;
                                   });
    }
};
inline constexpr guarded_algorithm<gather_sequential_fn> gather_sequential{};

struct gather_parallel_fn {
    static constexpr algorithm_info info{.collective = "gather", .name = "parallel", .code = 2};

    template <class C, class T>
    std::optional<std::vector<T>> operator()(C& comm, T value, int root = 0, stream s = {}) const {
        return detail::gather_with(comm, std::move(value), root, s, info,
                                   [](C& c, const std::vector<int>& others, tag t) {
                                       return detail::receive_from_each<T>(c, others, t);
                                   });
    }
};
inline constexpr guarded_algorithm<gather_parallel_fn> gather_parallel{};

}  // namespace csp::collectives
