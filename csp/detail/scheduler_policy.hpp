#pragma once
// Boost.Fiber scheduling policies of a runtime. Both do what Boost's
// round_robin / work_stealing do, and add two things csp needs: when a worker
// runs out of ready fibers it asks the runtime whether the program is
// deadlocked before it goes to sleep; and if the runtime has an idle poller
// (the IO scheduler, idle_poller.hpp) the worker waits in its poll instead of
// on a condition variable, so that notify() reaches it through the poller's
// wake-up (the self-pipe).
//
// While fibers are always ready the workers never idle, so they also poll
// without blocking at most once per `busy_poll_interval`: file descriptors
// are served even in a program that never rests.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

#include <boost/fiber/algo/algorithm.hpp>
#include <boost/fiber/context.hpp>

#include "csp/detail/fiber_internals.hpp"

#include "csp/detail/runtime_core.hpp"

namespace csp::detail {

// One thread: a plain FIFO ready queue, no locks on the fast path.
//
// Boost's dispatcher context (which moves fibers woken from other threads
// and expired timers into the ready queue, and frees finished fibers) is kept
// out of the queue: it runs when nothing else is ready, and otherwise once
// every `dispatch_interval` picks. In a busy network this saves the
// dispatcher's round (a clock read, two queue scans, two switches) on every
// turn of the ready queue, at the price of delaying a remote wake-up or a
// timer by at most that many context switches.
inline constexpr std::chrono::microseconds busy_poll_interval{1000};

// Says when a busy worker should poll without blocking. Only ever asked by
// Boost's dispatcher context (see on_dispatcher()): a pick_next() made on
// behalf of a fiber that is suspending must not poll, because the poll may
// commit and wake that very fiber before it has finished suspending.
class busy_poll_clock {
public:
    bool due() noexcept {
        if (++passes_ < check_every) return false;
        passes_ = 0;
        const auto now = std::chrono::steady_clock::now();
        if (now - last_ < busy_poll_interval) return false;
        last_ = now;
        return true;
    }

private:
    static constexpr unsigned check_every = 32;
    unsigned passes_ = 0;
    std::chrono::steady_clock::time_point last_{};
};

class single_thread_policy final : public boost::fibers::algo::algorithm {
public:
    explicit single_thread_policy(runtime_core* rt);

    void awakened(boost::fibers::context* ctx) noexcept override;
    boost::fibers::context* pick_next() noexcept override;
    bool has_ready_fibers() const noexcept override;
    void suspend_until(std::chrono::steady_clock::time_point const& t) noexcept override;
    void notify() noexcept override;

private:
    static constexpr unsigned dispatch_interval = 64;

    fiber::ready_queue ready_;
    boost::fibers::context* dispatcher_ = nullptr;
    unsigned picks_since_dispatch_ = 0;
    runtime_core* rt_;
    busy_poll_clock busy_poll_;
    std::mutex mutex_;
    std::condition_variable cv_;
    bool notified_ = false;
    idle_poller* polling_ = nullptr;  // the poller this thread waits in, guarded by mutex_
};

class worker_policy;

// The workers of a multi-threaded runtime and the idle protocol between them.
// A worker about to sleep announces itself in `sleepers` before it looks for
// stealable work one last time; a worker that queues work checks `sleepers`
// after queueing. One of the two always sees the other (no lost wake-up).
class worker_pool {
public:
    explicit worker_pool(std::size_t n) : workers_(n, nullptr) {}

    void attach(std::size_t idx, worker_policy* w);
    void work_added();
    // Boost pushed a fiber into `w`'s remote-ready queue: `w` must run its
    // dispatcher soon. The flag persists, so a notify that comes just before
    // `w` goes idle is not lost.
    void notify(worker_policy* w);
    void wake_all();
    bool has_stealable_work(const worker_policy* except) const;
    void idle(worker_policy* self, runtime_core* rt, std::chrono::steady_clock::time_point until);
    boost::fibers::context* steal_for(const worker_policy* thief);

private:
    // Under mutex_: the poller to wake if `wanted`, a worker is polling, and
    // this poll has not been woken yet; otherwise nullptr.
    idle_poller* poll_to_wake_locked(bool wanted) {
        return wanted && poller_ && !std::exchange(poller_woken_, true) ? poller_ : nullptr;
    }

    std::vector<worker_policy*> workers_;
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::uint64_t epoch_ = 0;
    std::atomic<int> sleepers_{0};
    // The worker waiting in the runtime's idle poller and that poller (at
    // most one worker polls; the others sleep on cv_). Guarded by mutex_.
    worker_policy* polling_worker_ = nullptr;
    idle_poller* poller_ = nullptr;
    bool poller_woken_ = false;  // a wake() was sent during this poll already
    static constexpr std::chrono::microseconds spin_for{50};
};

// One worker of a multi-threaded runtime: a locked deque per worker; an idle
// worker steals from the back of another's (never a pinned main or
// dispatcher context). An idle worker spins for a few microseconds before it
// sleeps: waking a sleeping thread costs tens of microseconds, far more than
// the gaps between messages in a busy network.
class worker_policy final : public boost::fibers::algo::algorithm {
public:
    worker_policy(worker_pool* pool, std::size_t idx, runtime_core* rt);

    void awakened(boost::fibers::context* ctx) noexcept override;
    boost::fibers::context* pick_next() noexcept override;
    bool has_ready_fibers() const noexcept override;
    void suspend_until(std::chrono::steady_clock::time_point const& t) noexcept override;
    void notify() noexcept override;

    boost::fibers::context* steal() noexcept;
    bool has_stealable() const noexcept;

    // Set (under the pool's mutex) when Boost queued a remote wake-up for this
    // worker; read without the lock while spinning.
    std::atomic<bool> notified{false};

private:
    worker_pool* pool_;
    runtime_core* rt_;
    busy_poll_clock busy_poll_;
    mutable std::mutex mutex_;
    std::deque<boost::fibers::context*> ready_;
};

}  // namespace csp::detail
