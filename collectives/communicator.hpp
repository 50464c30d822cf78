#pragma once
// What every collective algorithm is written against.
//
// A communicator is one rank's view of a group: its rank, the group's size,
// and tagged point-to-point messages. Sends never block (they queue at the
// receiver); receives block the calling process only, and several processes
// of one rank may receive at once (parallel receive). Messages from one rank
// with one tag arrive in the order sent.
//
// Two implementations run the same algorithms: local_communicator (ranks as
// processes of one runtime, local_communicator.hpp) and net_communicator
// (ranks as nodes, net_communicator.hpp). traced<C> wraps either and records
// what an algorithm did (trace.hpp).
#include <concepts>
#include <cstddef>
#include <span>
#include <string>
#include <utility>

#include "collectives/algorithm.hpp"
#include "collectives/tag.hpp"
#include "csp/error.hpp"

namespace csp::collectives {

template <class T>
struct received {
    int source;
    T value;
};

// Probe values for the concept below.
struct probe_value { int x; };

template <class C>
concept communicator = requires(C& c, const C& cc, tag t, stream s, probe_value v) {
    { cc.rank() } -> std::convertible_to<int>;
    { cc.size() } -> std::convertible_to<int>;
    c.send(0, t, v);
    { c.template receive<probe_value>(0, t) } -> std::same_as<probe_value>;
    { c.template receive_any<probe_value>(t) } -> std::same_as<received<probe_value>>;
    { c.next_tag(s) } -> std::same_as<tag>;
};

// A receive from any of the ranks `among`, those that may still send with
// t. Where the communicator keeps track of ranks that leave (nodes, a hybrid
// job, their groups: receive_any_of), only the failure of a rank in `among`
// fails it, so a rank that sent its part and left is no error; ranks as
// processes of one runtime never leave, and receive from anyone.
template <class T, class C>
received<T> receive_any_of(C& comm, tag t, std::span<const int> among) {
    if constexpr (requires { comm.template receive_any_of<T>(t, among); })
        return comm.template receive_any_of<T>(t, among);
    else
        return comm.template receive_any<T>(t);
}

// A message whose loss to a rank that has gone is no fault (a failed call's
// revocation, a task graph's abort): a notice where the communicator sends
// those (net and hybrid ones, their groups: net::node::send_notice), a
// plain send elsewhere. The other send errors stand.
template <class C, class T>
void send_notice(C& comm, int to, tag t, T&& value) {
    if constexpr (requires { comm.send_notice(to, t, std::forward<T>(value)); })
        comm.send_notice(to, t, std::forward<T>(value));
    else
        comm.send(to, t, std::forward<T>(value));
}

namespace detail {

inline void check_rank(int r, int size, const char* what) {
    if (r < 0 || r >= size)
        throw usage_error(std::string(what) + " rank " + std::to_string(r) + " is outside the group of " +
                          std::to_string(size));
}

// Announces to a tracing communicator which algorithm a call runs; a no-op
// for the others.
template <class C>
void announce(C& comm, const algorithm_info& a, tag t) {
    if constexpr (requires { comm.record_algorithm(a, t); }) comm.record_algorithm(a, t);
}

// t marked with a's collective and a's code (tag.hpp: ranks that make
// different collectives, or choose different algorithms, at one place of a
// stream never take each other's messages).
constexpr tag marked(tag t, const algorithm_info& a) { return t.of_call(call_code(a.collective)).of_algorithm(a.code); }

// The tag of one call of algorithm `a` on stream s: the communicator's
// next, marked, and announced.
template <class C>
tag begin_call(C& comm, const algorithm_info& a, stream s) {
    const tag t = marked(comm.next_tag(s), a);
    announce(comm, a, t);
    return t;
}

}  // namespace detail
}  // namespace csp::collectives
