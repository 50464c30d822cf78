#pragma once
// A process's turn on its worker, and how a turn ends without a wait.
//
// Scheduling is cooperative: a worker switches only when its process waits or
// yields. A process whose operations always complete at once (a reader whose
// buffer a faster writer keeps full, a select polling with skip in a loop)
// would keep its worker for ever: the worker's timers would not fire,
// processes woken from other threads would not run, and a ready process of
// higher priority would not be served.
//
// So every read and every select counts against the turn, and once
// tuning::ops_per_turn of them completed since the worker last switched, the
// process yields, and the worker's policy runs Boost's dispatcher (expired
// timers, processes woken from other threads) before it picks again.
//
// What must stay true:
//  - Every pick of a policy starts a new turn (ops = 0); an operation that
//    waited therefore never ends a turn, and a network that switches often
//    (Commstime) never yields here: it pays one thread-local increment.
//  - A write never ends a turn: a write into a buffer with room never
//    suspends (channel.hpp says so), and code relies on it, writing under a
//    lock (iosched's request queue, collectives' mailbox).
//  - Only a process of a runtime yields. A plain thread is preempted by the
//    kernel, and Boost's dispatcher (inside its own round) never yields.
#include <cstdint>

#include "csp/detail/tuning.hpp"

namespace csp::detail {

struct turn_state {
    unsigned ops = 0;     // reads and selects completed since the last pick
    bool ended = false;   // a process gave up its turn: dispatch before the next pick
    std::uint64_t picks = 0;  // processes this worker's policy picked so far (csp::yield)
    // The running process is yielding: Boost asks the policy for the next
    // fiber before it queues the yielder, so a queue that this pick empties
    // is not running dry (shared_ready_queue::drains). Set just before the
    // yield, cleared by the pick.
    bool yielding = false;
};
inline thread_local turn_state this_thread_turn;

// The calling thread's turn state, found anew by a call the compiler cannot
// see through: a fiber may resume on another thread after a switch, and a
// thread-local's address computed before it would be the old thread's.
turn_state* this_thread_turn_state() noexcept;

// Yields the caller's worker if the caller is a process (scheduler_policy.cpp).
void end_turn() noexcept;

// csp::yield()'s shortcut: true if nothing else is ready on the caller's
// thread of its runtime, so that it may go on at once
// (single_thread_policy::lone_yield, worker_policy::lone_yield).
bool lone_yield() noexcept;

inline void count_turn_op() noexcept {
    if (++this_thread_turn.ops >= tuning::ops_per_turn) [[unlikely]] end_turn();
}
}  // namespace csp::detail
