#pragma once
// Process priorities: scheduling metadata that orders ready processes.
//
// A priority is a small integer from priority_lowest (0) to priority_highest
// (7); a new process inherits its parent's, the root starts at
// priority_normal. Every ready queue of a runtime, on one thread or many, and
// every queue a worker steals from, serves the highest priority first and is
// FIFO among equals. Priority changes only the order in which ready processes
// run, never what a program computes: a rendezvous still waits for its partner,
// and a low-priority process still runs whenever nothing above it is ready.
//
//   csp::pri_par(urgent, background);         // occam-pi PRI PAR: urgent above
//   csp::this_process::set_priority(csp::priority_high);
#include <cstdint>

namespace csp {

using priority = int;

inline constexpr priority priority_lowest = 0;
inline constexpr priority priority_low = 2;
inline constexpr priority priority_normal = 4;
inline constexpr priority priority_high = 6;
inline constexpr priority priority_highest = 7;
inline constexpr int priority_levels = priority_highest + 1;

}  // namespace csp
