#pragma once
// Passing a vector on down a ring or a chain while reading it.
//
//   cc::relay<double>(comm, prev, next, t, [&](std::span<const double> got) {
//       std::copy(got.begin(), got.end(), out.begin() + at);   // the one copy
//   });
//
// Receives a std::vector<E> (or span of E) sent with tag `t` from `from`,
// sends the same elements on to `to` with tag `t`, and calls f with them.
// Communicators whose messages are bytes (net, hybrid) send the received
// message's own bytes on, without decoding or copying them, before f runs;
// the span is valid only inside f. Any other receives the vector, calls f,
// and sends the vector on (moved). So a hop of a ring allgather or a pipelined
// broadcast copies each element once, into its destination.
#include <span>
#include <utility>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/receive_view.hpp"

namespace csp::collectives {

template <class E, class C, class F>
void relay(C& comm, int from, int to, tag t, F&& f) {
    if constexpr (requires { comm.template relay<E>(from, to, t, f); }) {
        comm.template relay<E>(from, to, t, std::forward<F>(f));
    } else {
        auto v = comm.template receive<std::vector<E>>(from, t);
        std::forward<F>(f)(std::span<const E>(v));
        comm.send(to, t, std::move(v));
    }
}

}  // namespace csp::collectives
