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
#include <boost/fiber/scheduler.hpp>

#include "csp/detail/fiber_internals.hpp"
#include "csp/detail/process_record.hpp"

namespace csp::detail {

// Step 1, on the waiting process's own fiber. Inline: its frame and the
// waiter's are one (waiter.cpp), which a blocked process's stack carries.
inline void park(boost::fibers::context* self, process_record* rec) noexcept {
    boost::fibers::scheduler* s = self->get_scheduler();
    // The lock's holder object lives on this thread, not on the fiber's
    // stack. Boost releases park_lock inside the switch and then writes the
    // holder (unique_lock::unlock clears its owns flag after unlocking). Once
    // park_lock is free another worker may claim this fiber and run it on,
    // so a holder on the fiber's stack could be written by this thread after
    // the fiber had reused that slot: a later park's holder then looked
    // unlocked, and Boost's unlock threw EPERM (operation not permitted). The
    // next park on this thread starts only after this switch has finished.
    thread_local boost::fibers::detail::spinlock_lock lk;
    lk = fiber::lock_shallow(fiber::hook_of(rec)->park_lock);
    rec->parked = true;
    // Detached, the fiber belongs to no thread until a worker claims it; the
    // lock is released by Boost once the switch away has saved its context.
    s->detach_worker_context(self);
    s->suspend(lk);
}

// Step 2, by the waker, once it committed the process's waiter.
void hand_off(boost::fibers::context* ctx, process_record* rec) noexcept;

}  // namespace csp::detail
