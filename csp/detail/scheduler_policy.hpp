#pragma once
// Boost.Fiber scheduling policies of a runtime. Both do what Boost's
// round_robin / work_stealing do, and add what csp needs: a thread that runs
// out of ready fibers goes idle through the runtime's one idle protocol
// (idle_protocol.hpp: deadlock detection, waiting in the idle poller, no lost
// wake-up); and a thread that never runs out polls the idle poller without
// blocking now and then (busy_poll_clock), so file descriptors are served
// even in a program that never rests. Their constants are in tuning.hpp.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <deque>
#include <mutex>
#include <vector>

#include <boost/fiber/algo/algorithm.hpp>
#include <boost/fiber/context.hpp>

#include "csp/detail/fiber_internals.hpp"
#include "csp/detail/idle_protocol.hpp"
#include "csp/detail/runtime_core.hpp"
#include "csp/detail/tuning.hpp"

namespace csp::detail {

// Says when a busy thread should poll without blocking. Only ever asked by
// Boost's dispatcher context (see busy_poll() in scheduler_policy.cpp): a
// pick_next() made on behalf of a fiber that is suspending must not poll,
// because the poll may commit and wake that very fiber before it has
// finished suspending.
class busy_poll_clock {
public:
    bool due() noexcept {
        if (++passes_ < tuning::busy_poll_clock_every) return false;
        passes_ = 0;
        const auto now = std::chrono::steady_clock::now();
        if (now - last_ < tuning::busy_poll_interval) return false;
        last_ = now;
        return true;
    }

private:
    unsigned passes_ = 0;
    std::chrono::steady_clock::time_point last_{};
};

// One thread: a plain FIFO ready queue, no locks on the fast path.
//
// Boost's dispatcher context (which moves fibers woken from other threads
// and expired timers into the ready queue, and frees finished fibers) is kept
// out of the queue: it runs when nothing else is ready, and otherwise once
// every tuning::dispatch_interval picks.
class single_thread_policy final : public boost::fibers::algo::algorithm, private idle_thread {
public:
    explicit single_thread_policy(runtime_core* rt);

    void awakened(boost::fibers::context* ctx) noexcept override;
    boost::fibers::context* pick_next() noexcept override;
    bool has_ready_fibers() const noexcept override;
    void suspend_until(std::chrono::steady_clock::time_point const& t) noexcept override;
    void notify() noexcept override;

private:
    bool has_work() const noexcept override { return has_ready_fibers(); }

    fiber::ready_queue ready_;
    boost::fibers::context* dispatcher_ = nullptr;
    unsigned picks_since_dispatch_ = 0;
    runtime_core* rt_;
    busy_poll_clock busy_poll_;
    idle_protocol idle_;
};

class worker_policy;

// The workers of a multi-threaded runtime: where a worker steals from, and
// their shared idle protocol.
class worker_pool {
public:
    worker_pool(std::size_t n, runtime_core* rt) : workers_(n), idle_(n, rt) {}

    void attach(std::size_t idx, worker_policy* w);
    bool has_stealable_work(const worker_policy* except) const;
    boost::fibers::context* steal_for(const worker_policy* thief);
    idle_protocol& idle() noexcept { return idle_; }

private:
    // Each worker attaches itself from its own thread while others may
    // already look for work here: null until then.
    std::vector<std::atomic<worker_policy*>> workers_;
    idle_protocol idle_;
};

// One worker of a multi-threaded runtime: a locked deque per worker; an idle
// worker steals from the back of another's (never a pinned main or
// dispatcher context).
class worker_policy final : public boost::fibers::algo::algorithm, private idle_thread {
public:
    worker_policy(worker_pool* pool, std::size_t idx, runtime_core* rt);

    void awakened(boost::fibers::context* ctx) noexcept override;
    boost::fibers::context* pick_next() noexcept override;
    bool has_ready_fibers() const noexcept override;
    void suspend_until(std::chrono::steady_clock::time_point const& t) noexcept override;
    void notify() noexcept override;

    boost::fibers::context* steal() noexcept;
    bool has_stealable() const noexcept;

private:
    bool has_work() const noexcept override { return has_ready_fibers() || pool_->has_stealable_work(this); }

    worker_pool* pool_;
    runtime_core* rt_;
    busy_poll_clock busy_poll_;
    mutable std::mutex mutex_;
    std::deque<boost::fibers::context*> ready_;
};

}  // namespace csp::detail
