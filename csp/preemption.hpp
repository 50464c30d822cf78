#pragma once
// A preemption point, for code that completes a wait without the core's
// channels (an fd that is ready already, a message that arrived already).
//
// Scheduling is cooperative (csp/detail/turn.hpp): a worker switches when
// its process waits. Every read and select counts against the process's
// turn, and after enough of them without a switch the process yields, so its
// worker fires due timers, takes in processes woken from other threads and
// serves higher priorities. A wait answered without a channel must count
// too, or a loop of such waits keeps its worker for ever:
//
//   if (already_ready) { csp::preemption_point(); return result; }
//
// It may yield: never call it while holding a lock that another process of
// the same thread may take. On a plain thread it does nothing.
#include "csp/detail/turn.hpp"

namespace csp {

inline void preemption_point() noexcept { detail::count_turn_op(); }

}  // namespace csp
