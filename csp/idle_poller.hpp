#pragma once
// Lets an event source (the IO scheduler) wait in the runtime's idle moments.
//
// A worker thread with no ready fiber normally sleeps on a condition variable.
// If the runtime has an idle poller, the worker calls poll_until() instead, so
// the wait for file descriptors and the wait for more fibers to run are one
// system call. A wake-up for the worker (a fiber made ready from another
// thread, a timer that moved earlier) reaches it through wake().
#include <chrono>

namespace csp {

class idle_poller {
public:
    // Called by an idle worker, outside any fiber of the runtime. Blocks until
    // `until`, an event of the source, or wake(); returns true. Returns false
    // at once if the source has nothing to wait for right now (or another
    // worker is already polling it): the worker then sleeps as usual. A past
    // `until` makes it a non-blocking check.
    virtual bool poll_until(std::chrono::steady_clock::time_point until) noexcept = 0;

    // Any thread: make a poll_until() in progress return promptly. The
    // protocol (csp/detail/idle_protocol.hpp) sends it once a worker has
    // begun a poll attempt, possibly before that poll blocks: a wake-up must
    // end the next blocking poll however late it starts, so a non-blocking
    // check made meanwhile (by a busy worker) must leave it in place.
    virtual void wake() noexcept = 0;

protected:
    ~idle_poller() = default;
};

}  // namespace csp
