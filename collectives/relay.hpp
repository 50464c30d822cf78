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
#include <type_traits>
#include <utility>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/operation.hpp"

namespace csp::collectives {

namespace detail {

// Vectors whose elements a relay or a receive_view can pass as a span: a
// std::vector (of the default allocator: a message says which vector type
// it carries) of plain data, neither bool nor a pointer.
template <class T>
concept element_vector = is_vector<T>::value && std::is_same_v<T, std::vector<typename T::value_type>> &&
                         !std::is_same_v<typename T::value_type, bool> &&
                         !std::is_pointer_v<typename T::value_type> &&
                         std::is_trivially_copyable_v<typename T::value_type>;

}  // namespace detail

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
