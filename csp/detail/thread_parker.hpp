#pragma once
// How a plain thread (one that is not a worker of a running csp runtime)
// blocks in a waiter (csp/waiter.hpp).
//
// Why not Boost's own wake: Boost.Fiber wakes a thread's main context by
// queueing it on that thread's scheduler and then notifying the scheduler.
// Between the two, the woken thread may already run on, return from its
// channel operation, end, and destroy its scheduler: the waker then notifies
// freed memory. A waiter's wake must be safe even if the waiting side is gone
// the moment it can run (waiter invariant 2), so a plain thread parks on a
// parker of its own, which the waker keeps alive for the duration of the wake.
//
// Protocol: the permit is set by unpark() and consumed by park(); at most one
// is ever pending, because each commit of a waiter by someone else is followed
// by exactly one wake, consumed by exactly one park (waiter invariant 3).
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

namespace csp::detail {

class thread_parker : public std::enable_shared_from_this<thread_parker> {
public:
    void park() {
        std::unique_lock lk(mutex_);
        cv_.wait(lk, [this] { return permit_; });
        permit_ = false;
    }

    // False if `deadline` passed first (the permit, if one comes later, stays).
    bool park_until(std::chrono::steady_clock::time_point deadline) {
        std::unique_lock lk(mutex_);
        if (!cv_.wait_until(lk, deadline, [this] { return permit_; })) return false;
        permit_ = false;
        return true;
    }

    // Called by the waker while the parked thread cannot yet have gone (it
    // waits for this very permit): the reference taken first keeps the parker
    // alive until the notification is done.
    void unpark() {
        const std::shared_ptr<thread_parker> keep = shared_from_this();
        std::lock_guard lk(mutex_);
        permit_ = true;
        cv_.notify_one();
    }

    // The calling thread's parker, made on first use; it lives as long as the
    // thread, and longer while a waker still holds it.
    static thread_parker* of_this_thread() {
        thread_local const std::shared_ptr<thread_parker> mine = std::make_shared<thread_parker>();
        return mine.get();
    }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    bool permit_ = false;
};

}  // namespace csp::detail
