#pragma once
// Boost.Fiber scheduling policies of a runtime.
//
// Both serve the highest priority first and are FIFO among equals
// (ready_queue.hpp), go idle through the runtime's one idle protocol
// (idle_protocol.hpp: deadlock detection, waiting in the idle poller, no lost
// wake-up), and poll the idle poller without blocking now and then while
// they never run out of work (busy_poll_clock), so file descriptors are
// served even in a program that never rests. Constants are in tuning.hpp.
//
// The multi-thread policy replaces Boost's work_stealing algorithm: that one
// queues a woken fiber on the thread it last ran on, so two processes that
// talk to each other across workers pay a cross-core wake on every message.
// Here a process woken by a channel operation is handed to the waker's
// worker (handoff.hpp) and runs next there (Go's run-next slot):
//   - the run-next slot holds the process woken last; the one it displaces
//     goes to the back of the worker's queue, where other workers may steal
//     it. A local ping-pong goes through the slot alone: no lock, and no
//     cache line another worker writes.
//   - run-next wins ties of priority over the queue, but at most
//     tuning::run_next_streak times in a row, so a ping-pong cannot starve
//     its equals; above the queue's best it always goes first, so nothing
//     of a lower priority runs while it waits.
//   - an idle worker steals from the queue with the highest ready priority,
//     oldest first, once that queue has held work for a moment
//     (queue_look.hpp: a fiber waited, or the queue never ran dry); a
//     run-next slot only when its owner has not scheduled anything for a
//     while (it runs one long process: a producer computing its next item
//     while the consumer it woke waits in the slot). Filling an empty slot
//     wakes an eager sleeper to watch it (idle_protocol::work_held).
//   - a process that another worker claimed (it ran beside its waker, not
//     after it) goes back at its next hand-off to the worker it ran on, if
//     that one is idle (take_back), so that a pair computing side by side
//     does not wait in the waker's slot for a thief at every item.
//   - a yield with nothing else ready on its worker goes on at once, as on
//     one thread (lone_yield): it is no work for anyone else to take.
//   - queuing work wakes a sleeping worker only when no worker is already
//     looking for work and no wake-up is on its way
//     (idle_protocol::work_added). A sleeping worker
//     wakes every tuning::busy_watch while another holds work, so a fiber
//     behind a long-running process is taken over without a wake-up per push.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <vector>

#include <boost/fiber/algo/algorithm.hpp>
#include <boost/fiber/context.hpp>
#include <boost/fiber/scheduler.hpp>

#include "csp/detail/fiber_internals.hpp"
#include "csp/detail/idle_protocol.hpp"
#include "csp/detail/queue_look.hpp"
#include "csp/detail/ready_queue.hpp"
#include "csp/detail/runtime_core.hpp"
#include "csp/detail/tuning.hpp"
#include "csp/spinlock.hpp"

namespace csp::detail {

// Says when a busy thread should poll without blocking. Only ever asked by
// Boost's dispatcher context (see busy_poll() in scheduler_policy.cpp): a
// pick_next() made on behalf of a fiber that is suspending must not poll,
// because the poll may commit and wake that very fiber before it has
// finished suspending.
class busy_poll_clock {
public:
    bool due() noexcept {
        if (forced_) {
            forced_ = false;
            passes_ = 0;
            last_ = std::chrono::steady_clock::now();
            return true;
        }
        if (++passes_ < tuning::busy_poll_clock_every) return false;
        passes_ = 0;
        const auto now = std::chrono::steady_clock::now();
        if (now - last_ < tuning::busy_poll_interval) return false;
        last_ = now;
        return true;
    }
    // The next due() is true whatever the time (csp::yield_to_io()); until
    // then the policy runs its dispatcher at the next pick, where the poll
    // may happen. Unless the last poll is less than `gap` old: a process
    // that asks between short steps then polls once per gap, not per step.
    void force(std::chrono::steady_clock::duration gap) noexcept {
        if (forced_) return;
        const auto now = std::chrono::steady_clock::now();
        if (now - last_ >= gap) forced_ = true;
    }
    bool forced() const noexcept { return forced_; }

private:
    unsigned passes_ = 0;
    bool forced_ = false;
    std::chrono::steady_clock::time_point last_{};
};

// The busy-poll clock of the policy running on the calling thread, or
// nullptr: set and cleared by the policies themselves.
inline thread_local busy_poll_clock* busy_poll_of_this_thread = nullptr;

// One thread: a priority queue without locks.
//
// Boost's dispatcher context (which moves fibers woken from other threads
// and expired timers into the ready queue, and frees finished fibers) is kept
// out of the queue: it runs when nothing else is ready, and otherwise once
// every tuning::dispatch_interval picks.
class single_thread_policy final : public boost::fibers::algo::algorithm, private idle_thread {
public:
    explicit single_thread_policy(runtime_core* rt);
    ~single_thread_policy() override;

    void awakened(boost::fibers::context* ctx) noexcept override;
    boost::fibers::context* pick_next() noexcept override;
    bool has_ready_fibers() const noexcept override;
    void suspend_until(std::chrono::steady_clock::time_point const& t) noexcept override;
    void notify() noexcept override;

    // csp::yield() by the calling process when no other process is ready:
    // true if it may go on at once, without the two switches and the clock
    // read of a round through Boost's dispatcher. False when a process was
    // woken from another thread since the dispatcher last ran (notify()),
    // when a poll is forced, and on every tuning::dispatch_interval-th lone
    // yield, so that expired timers and the busy poll wait no longer than
    // they do behind a running network.
    bool lone_yield() noexcept;

    // A process woken by a channel operation, an alternation or a barrier of
    // the running process (waiter.cpp) runs next, before the ready queue, as
    // on a worker of a multi-thread runtime: the slot holds the one woken
    // last (the one it displaces is queued). It goes before the queue at a
    // higher priority than the queue's best, and at the same one at most
    // tuning::run_next_streak times in a row; otherwise it is queued.
    // Spawned, yielding and timed-out processes are queued (awakened).
    void run_next(boost::fibers::context* ctx) noexcept;

private:
    bool has_work() const noexcept override { return has_ready_fibers(); }

    ready_queue ready_;
    boost::fibers::context* next_ = nullptr;
    int next_level_ = priority_normal;
    unsigned next_streak_ = 0;
    boost::fibers::context* dispatcher_ = nullptr;
    unsigned picks_since_dispatch_ = 0;
    unsigned lone_yields_ = 0;
    // Set by notify() (after Boost queued a process woken from another
    // thread), cleared when the dispatcher is picked, before it moves those
    // processes into ready_.
    std::atomic<bool> woken_remotely_{false};
    runtime_core* rt_;
    busy_poll_clock busy_poll_;
    idle_protocol idle_;
};

class worker_policy;

// A queue several threads push to and take from: a worker's stealable queue,
// and the pool's shared queue. `levels` mirrors the queue's non-empty levels
// so that others can look without the lock.
class shared_ready_queue {
public:
    void push(boost::fibers::context* ctx, int level) noexcept;
    // Highest priority first, oldest first, skipping handed-off processes
    // still on their way into suspension (handoff.hpp step 3). `refilled`:
    // the taker's yielding process is queued next (turn_state::yielding).
    boost::fibers::context* take(bool refilled = false) noexcept;
    // The highest non-empty level, or -1; a snapshot.
    int top_level() const noexcept {
        const std::uint32_t m = levels_.load(std::memory_order_relaxed);
        return m == 0 ? -1 : 31 - __builtin_clz(m);
    }
    // How many fibers were ever pushed and taken: a thief that saw `pushes`
    // earlier and now sees fewer `takes` knows a fiber has waited since.
    std::uint64_t pushes() const noexcept { return pushes_.load(std::memory_order_relaxed); }
    std::uint64_t takes() const noexcept { return takes_.load(std::memory_order_relaxed); }
    // How many takes left the queue empty, not counting one made for a
    // process that yields and is queued right after (queue_look.hpp).
    std::uint64_t drains() const noexcept { return drains_.load(std::memory_order_relaxed); }

private:
    spinlock lock_;
    ready_queue queue_;
    std::atomic<std::uint32_t> levels_{0};
    std::atomic<std::uint64_t> pushes_{0};  // written under lock_
    std::atomic<std::uint64_t> takes_{0};   // written under lock_
    std::atomic<std::uint64_t> drains_{0};  // written under lock_
};

// The workers of a multi-thread runtime: where they steal from, the queue of
// processes made ready by threads that are not workers, and their idle
// protocol.
class worker_pool {
public:
    worker_pool(std::size_t n, runtime_core* rt) : workers_(n), owners_(n), idle_(n, rt) {}
    std::size_t size() const noexcept { return workers_.size(); }

    void attach(std::size_t idx, worker_policy* w);
    idle_protocol& idle() noexcept { return idle_; }

    // The shared queue (handoff.hpp step 2, from outside the workers).
    void inject(boost::fibers::context* ctx, int level) noexcept;
    int injected_level() const noexcept { return injected_.top_level(); }
    boost::fibers::context* take_injected() noexcept { return injected_.take(); }

    // The highest priority of work `thief` may take now from the others'
    // queues or the shared queue, or -1. Another worker's queue is stealable
    // once it has held work for tuning::steal_delay (queue_look.hpp).
    int stealable_level(const worker_policy* thief) const noexcept;
    // Whether another worker has queued work that is not stealable yet.
    bool young_work(const worker_policy* thief) const noexcept;
    // Work for `thief`: the highest priority queued anywhere else, then a
    // run-next slot whose owner has been running one process for a while.
    boost::fibers::context* steal_for(worker_policy* thief) noexcept;
    // Whether some other worker holds a process in its run-next slot.
    bool run_next_held(const worker_policy* self) const noexcept;
    // Notes the first run-next slot `thief` sees now, for its next look.
    void sight_run_next(const worker_policy* thief) const noexcept;
    // Whether `thief` may take the run-next process it sighted: the same
    // process sat there since that look, at least tuning::run_next_steal_delay
    // ago, while its owner picked nothing (it runs one long process) and had
    // nothing queued. Otherwise sights anew.
    bool run_next_stealable(const worker_policy* thief) const noexcept;
    // Processes taken from a run-next slot by another worker, ever: each one
    // waited there tuning::run_next_steal_delay while its waker ran on.
    std::uint64_t run_next_steals() const noexcept { return run_next_steals_.load(std::memory_order_relaxed); }

private:
    // Calls f(w) for every attached worker other than `self`.
    template <class F>
    void for_each_other(const worker_policy* self, F&& f) const {
        for (const auto& slot : workers_) {
            worker_policy* w = slot.load(std::memory_order_acquire);
            if (w != nullptr && w != self) f(w);
        }
    }
    // The highest level `thief` may take now (stealable_level), and from whom:
    // `victim` is null when it is the shared queue. `now` is read on first
    // need when the caller left it unset.
    int best_stealable(const worker_policy* thief, worker_policy*& victim,
                       std::chrono::steady_clock::time_point& now) const noexcept;


private:
    // Each worker attaches itself from its own thread while others may
    // already look for work here: null until then.
    std::vector<std::atomic<worker_policy*>> workers_;
    // A worker's policy lives as long as the pool, not as long as its thread's
    // Boost scheduler: while the run shuts down, a worker still looking for
    // work reads the others' queues after their threads have ended.
    std::vector<boost::fibers::algo::algorithm::ptr_t> owners_;
    shared_ready_queue injected_;
    idle_protocol idle_;
    std::atomic<std::uint64_t> run_next_steals_{0};
};

// One worker of a multi-thread runtime (the policy in the header comment).
class worker_policy final : public boost::fibers::algo::algorithm, private idle_thread {
public:
    worker_policy(worker_pool* pool, std::size_t idx, runtime_core* rt);
    ~worker_policy() override;

    void awakened(boost::fibers::context* ctx) noexcept override;
    boost::fibers::context* pick_next() noexcept override;
    bool has_ready_fibers() const noexcept override;
    void suspend_until(std::chrono::steady_clock::time_point const& t) noexcept override;
    void notify() noexcept override;

    runtime_core* runtime() const noexcept { return rt_; }
    // csp::yield() by the calling process, as single_thread_policy's: true if
    // nothing else of this worker's is ready (run-next slot, queue, main
    // context, the shared queue), so that it may go on at once. The round
    // through Boost's dispatcher would queue it where thieves look and tell
    // the idle workers of work (one spins on that queue's cache line) only
    // for this worker to pick it again: 340-390 ns against 8-10.
    bool lone_yield() noexcept;
    // Handoff.hpp step 2 on this worker's own thread.
    void run_next(boost::fibers::context* ctx) noexcept;
    // Handoff.hpp step 2 from another worker's thread, for a process that
    // last ran here apart from its waker: queued here, where this worker
    // looks first and its waker's worker may steal it.
    void take_back(boost::fibers::context* ctx) noexcept;
    // Whether this worker has nothing to run (it spins or sleeps in the idle
    // protocol); a snapshot.
    bool idle() const noexcept { return idle_.load(std::memory_order_relaxed); }

    // For thieves.
    int queued_level() const noexcept { return queue_.top_level(); }
    boost::fibers::context* steal() noexcept { return queue_.take(); }
    // Takes the run-next process if it is `seen` and this worker has not
    // scheduled anything since `picks`.
    boost::fibers::context* steal_run_next(boost::fibers::context* seen, unsigned picks) noexcept;
    boost::fibers::context* peek_run_next() const noexcept { return next_.load(std::memory_order_relaxed); }
    unsigned picks() const noexcept { return picks_.load(std::memory_order_relaxed); }

    // What this worker last saw of each other's queue (stealable_level).
    mutable std::vector<queue_look> looks;

    // The owner's queue, for thieves.
    const shared_ready_queue& stealable_queue() const noexcept { return queue_; }
    std::size_t index() const noexcept { return idx_; }

    // What this worker last saw of another's run-next slot
    // (run_next_stealable).
    struct run_next_sighting {
        worker_policy* owner = nullptr;
        boost::fibers::context* ctx = nullptr;
        unsigned picks = 0;
        std::chrono::steady_clock::time_point when{};
    };
    mutable run_next_sighting sighting;

private:
    bool has_work() const noexcept override {
        return has_ready_fibers() || pool_->stealable_level(this) >= 0 || pool_->run_next_stealable(this);
    }
    // Queued work not stealable yet, or a run-next process: its owner may
    // keep running the process that woke it (a producer computing its next
    // item while the consumer it woke waits in the slot).
    bool work_expected() const noexcept override {
        return pool_->young_work(this) || pool_->run_next_held(this);
    }
    std::uint64_t runs() const noexcept override;  // asked on the worker's own thread
    std::chrono::steady_clock::time_point sleep_limit() noexcept override;
    // `yielding`: this pick is for a process that yields.
    boost::fibers::context* take_local(bool yielding) noexcept;
    void queue(boost::fibers::context* ctx,
               idle_protocol::work w = idle_protocol::work::requeued) noexcept;

    worker_pool* pool_;
    std::size_t idx_;
    runtime_core* rt_;
    boost::fibers::scheduler* sched_;  // this thread's Boost scheduler
    busy_poll_clock busy_poll_;
    boost::fibers::context* dispatcher_ = nullptr;
    unsigned picks_since_dispatch_ = 0;
    unsigned lone_yields_ = 0;
    // Set by notify() (a fiber woken from another thread through Boost's
    // remote queue), cleared when the dispatcher is picked.
    std::atomic<bool> woken_remotely_{false};
    boost::fibers::context* main_ = nullptr;  // this thread's main context, when ready
    unsigned next_streak_ = 0;                // run-next picks in a row
    // The priority of the process run_next() last put in next_. Only the
    // owner writes a process into next_ (thieves only empty it), so when
    // next_ is not empty it holds that process.
    int next_level_ = priority_normal;

    // Written by the owner on every pick and by wakers; read by thieves as
    // they look for work (run_next_stealable), which a thread woken for
    // nothing stops doing but once per tuning::busy_watch (idle_protocol.hpp).
    alignas(64) std::atomic<boost::fibers::context*> next_{nullptr};
    std::atomic<unsigned> picks_{0};
    std::atomic<bool> idle_{false};  // in suspend_until (idle())
    // Stealable: every fiber here is detached from this thread.
    alignas(64) shared_ready_queue queue_;
};

}  // namespace csp::detail
