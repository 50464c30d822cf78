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

    // Any thread: make a poll_until() in progress return promptly.
    virtual void wake() noexcept = 0;

protected:
    ~idle_poller() = default;
};

}  // namespace csp
