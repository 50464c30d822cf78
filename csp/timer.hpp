#pragma once
// Time for processes: sleeping blocks only the calling fiber (or, called from
// a plain thread, that thread). A sleeping process is never reported as
// deadlocked: its timer will wake it. For a deadline among other events use
// csp::timeout / csp::deadline guards in a select (alt.hpp).
#include <chrono>

#include "csp/deadline_after.hpp"
#include "csp/waiter.hpp"

namespace csp {

void sleep_until(clock::time_point t);  // timer.cpp

template <class Rep, class Period>
void sleep_for(std::chrono::duration<Rep, Period> d) {
    sleep_until(deadline_after(d));
}

// Let other ready processes run. Returns whether another process ran before
// the caller did again; false if the caller was the only process ready, so
// that a polling loop can tell "nothing else to do here" (and give up its
// core to other programs) from "others had work".
bool yield();  // timer.cpp

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
