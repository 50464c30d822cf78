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

#include "collectives/communicator.hpp"
#include "collectives/detail/peers.hpp"
#include "collectives/topology.hpp"

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

template <class C, class T>
std::optional<std::vector<T>> gather_sequential(C& comm, T value, int root = 0, stream s = {}) {
    topology::check(comm.rank(), comm.size(), root);
    const tag t = comm.next_tag(s);
    detail::announce(comm, "gather", "sequential", t);
    if (comm.rank() != root) {
        comm.send(root, t, std::move(value));
        return std::nullopt;
    }
    std::vector<T> all;
    all.reserve(static_cast<std::size_t>(comm.size()));
    for (int r = 0; r < comm.size(); ++r) all.push_back(r == root ? value : comm.template receive<T>(r, t));
    return all;
}

template <class C, class T>
std::optional<std::vector<T>> gather_parallel(C& comm, T value, int root = 0, stream s = {}) {
    topology::check(comm.rank(), comm.size(), root);
    const tag t = comm.next_tag(s);
    detail::announce(comm, "gather", "parallel", t);
    if (comm.rank() != root) {
        comm.send(root, t, std::move(value));
        return std::nullopt;
    }
    const auto others = detail::all_but(comm, root);
    std::vector<T> got = others.empty() ? std::vector<T>{} : detail::receive_from_each<T>(comm, others, t);
    got.insert(got.begin() + root, std::move(value));
    return got;
}

}  // namespace csp::collectives
