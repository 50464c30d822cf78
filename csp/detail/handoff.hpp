#pragma once
// How a multi-thread runtime moves a blocked process to the worker that
// wakes it (Go's run-next slot), so that processes which talk to each other
// end up on one worker and a local ping-pong never crosses cores.
//
// Protocol (the waiter's side is csp/waiter.hpp, the workers' side
// scheduler_policy.cpp):
//  1. A process that waits without a deadline parks: it detaches its fiber
//     from its worker's Boost scheduler, sets process_record::parked under
//     park_lock, and suspends with park_lock held; Boost releases the lock
//     only after the fiber's context is saved.
//  2. Whoever commits its waiter calls hand_off(): the process goes to the run-
//     next slot of the calling thread's worker, or to the runtime's shared
//     queue when the caller is not one of its workers (a plain thread, a worker
//     of another runtime). This never waits, so it is safe under any lock.
//  3. A worker takes a handed-off process from a queue only once it holds
//     park_lock and sees `parked` (the process may have been committed before
//     it finished suspending); it then attaches the fiber to its own scheduler
//     and runs it. Until then the process stays queued and others are served.
// A timed wait, a plain thread and a one-thread runtime use Boost's own wake
// (the fiber stays with its thread, which is woken if it sleeps).
#include <boost/fiber/context.hpp>

#include "csp/detail/process_record.hpp"

namespace csp::detail {

// Step 1, on the waiting process's own fiber.
void park(boost::fibers::context* self, process_record* rec) noexcept;

// Step 2, by the waker, once it committed the process's waiter.
void hand_off(boost::fibers::context* ctx, process_record* rec) noexcept;

}  // namespace csp::detail
