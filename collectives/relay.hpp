#pragma once
// Passing received messages on: down a ring or a chain while reading them,
// or down a tree.
//
//   cc::relay<double>(comm, prev, next, t, [&](std::span<const double> got) {
//       std::copy(got.begin(), got.end(), out.begin() + at);   // the one copy
//   });
//   T v = cc::pass_on<T>(comm, parent, children, t);   // the children get it as it came
//
// Receives a std::vector<E> (or span of E) sent with tag `t` from `from`,
// sends the same elements on to `to` with tag `t`, and calls f with them.
// Communicators whose messages are bytes (net, hybrid) send the received
// message's own bytes on, without decoding or copying them, before f runs;
// the span is valid only inside f. Any other receives the vector, calls f,
// and sends the vector on (moved). So a hop of a ring allgather or a pipelined
// broadcast copies each element once, into its destination.
//
// pass_on receives a T from `from` and sends it on to every rank of `to`.
// Net and hybrid communicators pass the message on as it came, before
// decoding it (a message of another type goes no further: decode_error);
// any other sends each rank a copy. So an inner rank of a broadcast tree
// copies the value once, decoding it, however many children it has (and
// the root encodes it once: detail::send_to_each).
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

template <class T, class C>
T pass_on(C& comm, int from, std::span<const int> to, tag t) {
    if constexpr (requires { comm.template pass_on<T>(from, to, t); }) {
        return comm.template pass_on<T>(from, to, t);
    } else {
        T value = comm.template receive<T>(from, t);
        for (int r : to) comm.send(r, t, value);
        return value;
    }
}

}  // namespace csp::collectives
