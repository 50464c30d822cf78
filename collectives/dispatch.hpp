#pragma once
// The collectives by their plain names: each picks its algorithm through the
// selection table (selection.hpp) and runs it.
//
//   double total = csp::collectives::allreduce(comm, x, csp::collectives::sum{});
//   auto at_root = csp::collectives::reduce(comm, x, op, /*root=*/3);   // optional
//
// Calling an algorithm by its own name (reduce_chain, allreduce_butterfly,
// ...) bypasses the table; the names are listed in registry.hpp.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "collectives/allgather.hpp"
#include "collectives/allreduce.hpp"
#include "collectives/alltoall.hpp"
#include "collectives/barrier.hpp"
#include "collectives/broadcast.hpp"
#include "collectives/detail/part_or_size.hpp"
#include "collectives/exchange.hpp"
#include "collectives/gather.hpp"
#include "collectives/operation.hpp"
#include "collectives/reduce.hpp"
#include "collectives/reduce_scatter.hpp"
#include "collectives/scan.hpp"
#include "collectives/scatter.hpp"
#include "collectives/registry.hpp"
#include "collectives/revocation.hpp"
#include "collectives/selection.hpp"

namespace csp::collectives {

namespace detail {
// What a call of `collective` on comm and stream s asks the table: its
// group size, the value's bytes and op, and where the ranks are (shared
// memory, the host level, a crowded job, levels of its own for this
// stream), each known alike at every rank. The stream comes before the
// optional parts so that no call can leave it out.
template <class C>
selection::request request_of(const C& comm, std::string_view collective, stream s, std::size_t bytes = 0,
                              bool commuting = true, bool elementwise = false) {
    return {collective,          comm.size(),         bytes,           commuting, elementwise,
            shares_memory(comm), link_level_of(comm), crowded_of(comm), has_two_levels(comm, s)};
}

// The algorithm of `List` (a registry list) the table chooses for this call.
template <class List, class C>
std::string_view choose(const C& comm, stream s, std::size_t bytes = 0, bool commuting = true,
                        bool elementwise = false) {
    static constexpr std::string_view collective = List::infos[0].collective;
    static constexpr rule_range rules = rules_of(collective);
    static_assert(rules.first < rules.last, "a collective without a rule in the selection table");
    return selection::global().choose(request_of(comm, collective, s, bytes, commuting, elementwise), rules);
}

// Whether a value's size, as the table measures it (byte_size), can differ
// between ranks: a vector's or a string's; any other value counts as
// sizeof(T), alike everywhere.
template <class T>
inline constexpr bool size_varies = is_std_vector<T>::value || std::is_same_v<T, std::string>;

// The algorithm of `List` for a call whose value may have another size at
// other ranks (`alike` false: a fold of vectors or strings by an op that
// does not take equal sizes; an allgather's parts agree otherwise, below).
// The table chooses by size, and ranks whose sizes lie on either side of a
// rule's bound would run different algorithms and wait for each other for
// ever. So where the
// choice could differ by size alone (selection::depends_on_bytes, which
// every rank answers alike), the ranks first agree on the largest size in
// one small allreduce of the call's stream, and all choose by it.
template <class List, class C>
std::string_view choose_by_size(C& comm, stream s, std::size_t bytes, bool alike, bool commuting = true,
                                bool elementwise = false) {
    static constexpr std::string_view collective = List::infos[0].collective;
    static constexpr rule_range rules = rules_of(collective);
    selection::request r = request_of(comm, collective, s, bytes, commuting, elementwise);
    const selection& table = selection::global();
    if (!alike && table.depends_on_bytes(r, rules)) {
        const auto a = choose<registry::allreduce>(comm, s, sizeof(std::uint64_t));
        r.bytes = static_cast<std::size_t>(registry::allreduce::run(a, comm, std::uint64_t{bytes}, maximum{}, s));
    }
    return table.choose(r, rules);
}

// A plain allgather of parts whose sizes may differ between ranks. Where
// the table's choice depends on the size, agreeing on the largest size
// first would cost a small collective on every call; instead the ranks run
// the choice for small parts on each part with its size, the part left out
// where it is not small (part_or_size.hpp). If every part is small, as
// most are, that was the whole call; else every rank now knows the
// largest size, all choose by it, and the call runs again on the parts.
template <class C, class T>
std::vector<T> allgather_of_sizes(C& comm, T value, stream s) {
    static constexpr rule_range rules = rules_of("allgather");
    const selection& table = selection::global();
    const std::size_t bytes = byte_size(value);
    selection::request r = request_of(comm, "allgather", s, bytes);
    const std::size_t small = table.first_change(r, rules);
    if (small == no_limit) return registry::allgather::run(table.choose(r, rules), comm, std::move(value), s);
    r.bytes = 0;
    part_or_size<T> mine{bytes, {}};
    if (bytes < small) mine.part = std::move(value);
    auto first = registry::allgather::run(table.choose(r, rules), comm, std::move(mine), s);
    std::uint64_t largest = 0;
    bool every_part = true;
    for (const auto& p : first) {
        largest = std::max(largest, p.size);
        every_part = every_part && p.part.has_value();
    }
    if (every_part) {
        std::vector<T> parts;
        parts.reserve(first.size());
        for (auto& p : first) parts.push_back(std::move(*p.part));
        return parts;
    }
    if (bytes < small) value = std::move(*first[static_cast<std::size_t>(comm.rank())].part);
    r.bytes = static_cast<std::size_t>(largest);
    return registry::allgather::run(table.choose(r, rules), comm, std::move(value), s);
}

// Whether a fold's values have one size at every rank: a value the table
// counts as sizeof(T), or vectors of an op that takes equal sizes
// (element-wise). A string's size varies under every op (the maximum of
// two strings is either).
template <class T, class Op>
bool sizes_alike(const Op& op) {
    return !size_varies<T> || (is_vector<T>::value && takes_equal_sizes(op));
}
}  // namespace detail

template <class C, class T>
T broadcast(C& comm, T value, int root = 0, stream s = {}) {
    // The size is the root's alone, so it cannot choose: the table picks by
    // group size, and whether the value is a vector (the same everywhere).
    return detail::guarded(comm, s, "broadcast", [&] {
        const auto a = detail::choose<registry::broadcast>(comm, s, 0, true, detail::is_vector<T>::value);
        return registry::broadcast::run(a, comm, std::move(value), root, s);
    });
}

// MPI_Bcast's form: every rank passes a buffer of the same length, and the
// root's elements end up in every rank's buffer. The size is then known
// everywhere, so the table chooses by it: on one host the board copies the
// elements from the root's buffer into the others' (in chunks through the
// large board beyond a part), with no allocation; the other algorithms
// carry a vector of the root's elements, copied into each buffer where it
// arrives. A rank whose buffer has another length than the root's gets
// usage_error naming both (on the board every rank does).
template <class C, class E>
void broadcast_into(C& comm, std::span<E> data, int root = 0, stream s = {}) {
    static_assert(std::is_trivially_copyable_v<E> && !std::is_const_v<E>,
                  "broadcast_into: a writable buffer of plain elements");
    detail::guarded(comm, s, "broadcast", [&] {
        topology::check(comm.rank(), comm.size(), root);
        const std::string_view a = detail::choose<registry::broadcast>(comm, s, data.size_bytes(), true, true);
        if (a == broadcast_host_memory.info.name && broadcast_host_memory.into(comm, data, root, s)) return;
        std::vector<E> v;
        if (comm.rank() == root) v.assign(data.begin(), data.end());
        v = registry::broadcast::run(a == broadcast_host_memory.info.name ? broadcast_binomial.info.name : a, comm,
                                     std::move(v), root, s);
        if (comm.rank() == root) return;
        if (v.size() != data.size())
            throw usage_error("broadcast_into: rank " + std::to_string(comm.rank()) + "'s buffer holds " +
                              std::to_string(data.size()) + " elements, the root's " + std::to_string(v.size()));
        std::copy(v.begin(), v.end(), data.begin());
    });
}

template <class C, class T, class Op>
std::optional<T> reduce(C& comm, T value, const Op& op, int root = 0, stream s = {}) {
    return detail::guarded(comm, s, "reduce", [&] {
        const auto a = detail::choose_by_size<registry::reduce>(comm, s, detail::byte_size(value),
                                                                detail::sizes_alike<T>(op), commutes(op),
                                                                detail::is_vector<T>::value && acts_elementwise(op));
        return registry::reduce::run(a, comm, std::move(value), op, root, s);
    });
}

template <class C, class T, class Op>
T allreduce(C& comm, T value, const Op& op, stream s = {}) {
    return detail::guarded(comm, s, "allreduce", [&] {
        const auto a = detail::choose_by_size<registry::allreduce>(
            comm, s, detail::byte_size(value), detail::sizes_alike<T>(op), commutes(op),
            detail::is_vector<T>::value && acts_elementwise(op));
        return registry::allreduce::run(a, comm, std::move(value), op, s);
    });
}

template <class C>
void barrier(C& comm, stream s = {}) {
    detail::guarded(comm, s, "barrier", [&] {
        registry::barrier::run(detail::choose<registry::barrier>(comm, s), comm, s);
    });
}

template <class C, class T>
std::optional<std::vector<T>> gather(C& comm, T value, int root = 0, stream s = {}) {
    return detail::guarded(comm, s, "gather", [&] {
        return registry::gather::run(detail::choose<registry::gather>(comm, s), comm, std::move(value), root, s);
    });
}

template <class C, class T>
std::vector<T> allgather(C& comm, T value, stream s = {}) {
    return detail::guarded(comm, s, "allgather", [&] {
        if constexpr (detail::size_varies<T>) {
            return detail::allgather_of_sizes(comm, std::move(value), s);
        } else {
            const auto a = detail::choose<registry::allgather>(comm, s, detail::byte_size(value));
            return registry::allgather::run(a, comm, std::move(value), s);
        }
    });
}

template <class C, class T>
T scatter(C& comm, std::vector<T> values, int root = 0, stream s = {}) {
    return detail::guarded(comm, s, "scatter", [&] {
        return registry::scatter::run(detail::choose<registry::scatter>(comm, s), comm, std::move(values), root, s);
    });
}

template <class C, class T>
std::vector<T> alltoall(C& comm, std::vector<T> values, stream s = {}) {
    return detail::guarded(comm, s, "alltoall", [&] {
        return registry::alltoall::run(detail::choose<registry::alltoall>(comm, s), comm, std::move(values), s);
    });
}

template <class C, class T, class Op>
T scan(C& comm, T value, const Op& op, stream s = {}) {
    return detail::guarded(comm, s, "scan", [&] {
        const auto a = detail::choose_by_size<registry::scan>(comm, s, detail::byte_size(value),
                                                              detail::sizes_alike<T>(op), commutes(op));
        return registry::scan::run(a, comm, std::move(value), op, s);
    });
}

template <class C, class T, class Op>
std::optional<T> exscan(C& comm, T value, const Op& op, stream s = {}) {
    return detail::guarded(comm, s, "exscan", [&] {
        const auto a = detail::choose_by_size<registry::exscan>(comm, s, detail::byte_size(value),
                                                                detail::sizes_alike<T>(op), commutes(op));
        return registry::exscan::run(a, comm, std::move(value), op, s);
    });
}

// Block i of the element-wise fold to rank i; `counts[i]` elements each
// (reduce_scatter.hpp).
template <class C, class V, class Op>
V reduce_scatter(C& comm, V values, const std::vector<std::size_t>& counts, const Op& op, stream s = {}) {
    return detail::guarded(comm, s, "reduce_scatter", [&] {
        const auto a = detail::choose<registry::reduce_scatter>(comm, s, detail::byte_size(values), commutes(op));
        return registry::reduce_scatter::run(a, comm, std::move(values), counts, op, s);
    });
}

// reduce_scatter with equal blocks: the vectors' length must be a multiple
// of the group size.
template <class C, class V, class Op>
V reduce_scatter_block(C& comm, V values, const Op& op, stream s = {}) {
    const auto n = static_cast<std::size_t>(comm.size());
    if (values.size() % n != 0)  // one rank's length: it tells the others (revocation.hpp)
        return detail::guarded(comm, s, "reduce_scatter", [&]() -> V {
            throw usage_error("reduce_scatter_block: rank " + std::to_string(comm.rank()) + "'s " +
                              std::to_string(values.size()) + " elements do not split into equal blocks for " +
                              std::to_string(n) + " ranks");
        });
    const std::vector<std::size_t> counts(n, values.size() / n);
    return reduce_scatter(comm, std::move(values), counts, op, s);
}

// The value of rank `from` (exchange.hpp).
template <class C, class T>
T put_get(C& comm, T value, int from, stream s = {}) {
    return detail::guarded(comm, s, "put_get", [&] {
        return registry::put_get::run(detail::choose<registry::put_get>(comm, s), comm, std::move(value), from, s);
    });
}

}  // namespace csp::collectives
