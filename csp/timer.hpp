#pragma once
// Time for processes: sleeping blocks only the calling fiber (or, called from
// a plain thread, that thread). A sleeping process is never reported as
// deadlocked: its timer will wake it. For a deadline among other events use
// csp::timeout / csp::deadline guards in a select (alt.hpp).
#include <chrono>

#include <boost/fiber/operations.hpp>

#include "csp/detail/turn.hpp"
#include "csp/waiter.hpp"

namespace csp {

inline void sleep_until(clock::time_point t) { boost::this_fiber::sleep_until(t); }

template <class Rep, class Period>
void sleep_for(std::chrono::duration<Rep, Period> d) {
    boost::this_fiber::sleep_for(d);
}

// Let other ready processes run. Returns whether another process ran before
// the caller did again; false if the caller was the only process ready, so
// that a polling loop can tell "nothing else to do here" (and give up its
// core to other programs) from "others had work".
inline bool yield() {
    if (detail::lone_yield()) return false;
    detail::turn_state* const before = detail::this_thread_turn_state();
    const std::uint64_t picks = before->picks;
    boost::this_fiber::yield();
    // Resumed by another worker: others ran meanwhile. On the same worker,
    // the caller's own pick is one (the policies count processes they pick,
    // not Boost's dispatcher); any other came between.
    detail::turn_state* const after = detail::this_thread_turn_state();
    return after != before || after->picks - picks > 1;
}

// yield(), and before the caller runs again the runtime looks for events of
// its event sources (the IO scheduler's descriptors: sockets, UCX) without
// blocking, so that what they make ready is queued too. A runtime that is
// never idle otherwise looks once per millisecond of work; a process that
// computes in long steps while messages come in (a task graph's worker)
// calls this between steps, so that arrivals, and transfers that need this
// side to move (UCX rendezvous), wait for one step instead. Costs one
// non-blocking poll system call when the runtime has an event source, at
// most one per 50 us (detail/tuning.hpp, yield_to_io_gap): steps shorter
// than that share a poll, and wait for a few steps at most.
void yield_to_io();

}  // namespace csp
