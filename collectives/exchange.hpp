#pragma once
// Exchanges in which each rank names its partners.
//
//   T got = sendrecv(comm, mine, to, from);   // send to `to`, receive from `from`
//   T got = put_get(comm, mine, from);        // receive rank `from`'s value
//
// sendrecv is a collective call of the whole group, like the others (every
// rank calls it in the same order in its stream, tag.hpp), for patterns in
// which every rank knows both partners: shifts, rings, pairwise swaps. The
// send only queues, so no order of calls deadlocks.
//
// put_get (STAPERS's putGet, AFAPI's general permutation): every rank puts
// one value and gets the value of the rank it names; several ranks may name
// the same one, and a rank may name itself. Nobody needs to know who named
// it: the algorithms find out.
//
//   allgather  an allgather of the values; each rank keeps the one it named.
//              2(n-1) messages, the broadcast ones of n values each: for
//              small values.
//   requests   an allgather of the named ranks (one int each), then every
//              rank sends its value to each rank that named it. 2(n-1)
//              messages of n ints at most, plus one value per rank that did
//              not name itself.
//
// A named rank outside the group is found after the first allgather and
// reported on every rank (as a usage_error naming the rank that asked).
#include <string>
#include <utility>
#include <vector>

#include "collectives/algorithm.hpp"
#include "collectives/allgather.hpp"
#include "collectives/communicator.hpp"
#include "collectives/detail/peers.hpp"
#include "collectives/revocation.hpp"

namespace csp::collectives {

template <class C, class T>
T sendrecv(C& comm, T value, int to, int from, stream s = {}) {
    return detail::guarded(comm, s, "sendrecv", [&]() -> T {
        detail::check_rank(to, comm.size(), "sendrecv: destination");
        detail::check_rank(from, comm.size(), "sendrecv: source");
        const tag t = comm.next_tag(s);
        if (to == comm.rank() && from == comm.rank()) return std::move(value);
        comm.send(to, t, std::move(value));
        return comm.template receive<T>(from, t);
    });
}

namespace detail {
inline void check_requests(const std::vector<int>& from, int size) {
    for (std::size_t r = 0; r < from.size(); ++r)
        if (from[r] < 0 || from[r] >= size)
            throw agreed_error("put_get: rank " + std::to_string(r) + " asked for the value of rank " +
                              std::to_string(from[r]) + ", outside the group of " + std::to_string(size));
}
}  // namespace detail

struct put_get_allgather_fn {
    static constexpr algorithm_info info{.collective = "put_get", .name = "allgather", .code = 1};

    template <class C, class T>
    T operator()(C& comm, T value, int from, stream s = {}) const {
        detail::begin_call(comm, info, s);  // the steps below draw their own tags
        // The requests travel with the values, so a bad one is seen by all.
        auto all = allgather_gather_broadcast_fn{}(comm, std::pair<int, T>(from, std::move(value)), s);
        std::vector<int> requests;
        for (const auto& [f, v] : all) requests.push_back(f);
        detail::check_requests(requests, comm.size());
        return std::move(all[static_cast<std::size_t>(from)].second);
    }
};
inline constexpr guarded_algorithm<put_get_allgather_fn> put_get_allgather{};

struct put_get_requests_fn {
    static constexpr algorithm_info info{.collective = "put_get", .name = "requests", .code = 2};

    template <class C, class T>
    T operator()(C& comm, T value, int from, stream s = {}) const {
        const tag t = detail::begin_call(comm, info, s);
        const auto requests = allgather_gather_broadcast_fn{}(comm, from, s);
        detail::check_requests(requests, comm.size());
        const int me = comm.rank();
        std::vector<int> askers;
        for (int r = 0; r < comm.size(); ++r)
            if (r != me && requests[static_cast<std::size_t>(r)] == me) askers.push_back(r);
        detail::send_to_each(comm, askers, t, value);  // one encoding for all of them
        if (from == me) return value;
        return comm.template receive<T>(from, t);
    }
};
inline constexpr guarded_algorithm<put_get_requests_fn> put_get_requests{};

}  // namespace csp::collectives
