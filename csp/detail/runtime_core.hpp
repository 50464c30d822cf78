#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "csp/error.hpp"
#include "csp/idle_poller.hpp"
#include "csp/quiescence.hpp"
#include "csp/detail/process_record.hpp"
#include "csp/service.hpp"
#include "csp/detail/stack_pool.hpp"

namespace csp::detail {

class worker_pool;
class single_thread_policy;

// Shared state of one runtime that processes and waiters touch directly.
//
// Deadlock detection. A process waiting without a deadline (channel,
// alternation without timeout, barrier, par join) publishes its waiter in
// process_record::blocked_on. The runtime is deadlocked when, at a moment when
// no fiber of the runtime is running:
//   - every live process is registered (none is still waiting to start),
//   - every one of them has a blocked_on waiter that is still waiting (not
//     committed by a partner and on its way back), and
//   - no external party (a thread outside the runtime that declared it may
//     still use the runtime's channels) exists.
// A process sleeping or waiting with a deadline does not publish a waiter: a
// timer will wake it, so the runtime is not deadlocked. The scheduling
// policies call find_deadlock() only when every worker is idle, so no process
// can change state during the walk; this keeps the hot path free of shared
// counters.
//
// Daemon processes (process_group.hpp: the processes of services) are walked like
// any other, so a daemon that can be woken from outside (an IO scheduler with
// file descriptors to watch) keeps the runtime awake. But they are not
// program processes: they are left out of the report and are not aborted, and
// when only daemons are left there is no deadlock to report.
class runtime_core : public std::enable_shared_from_this<runtime_core> {
public:
    runtime_core(std::size_t stack_size, std::size_t threads, bool guard_pages = false)
        : stacks_(stack_pool::for_runtime(stack_size, guard_pages)), threads_(threads) {}
    ~runtime_core() { stack_pool::shelve(std::move(stacks_)); }
    runtime_core(const runtime_core&) = delete;
    runtime_core& operator=(const runtime_core&) = delete;

    // Worker threads (runtime_options::threads): with one, the runtime's
    // processes never run at the same time.
    std::size_t threads() const noexcept { return threads_; }

    // Accounting of a process's life: spawned by its parent, started and
    // stopped on its own fiber, exited as its very last act.
    void process_spawned() noexcept { live_.fetch_add(1); }
    void process_started(process_record* p) {
        std::lock_guard lk(registry_mutex_);
        p->next = head_;
        if (head_) head_->prev = p;
        head_ = p;
        ++registered_;
        ++started_;
        if (p->daemon) ++daemons_;
    }
    void process_stopped(process_record* p) {
        std::lock_guard lk(registry_mutex_);
        if (p->daemon) --daemons_;
        ++stopped_;
        if (p->prev) p->prev->next = p->next; else head_ = p->next;
        if (p->next) p->next->prev = p->prev;
        if (awake_hint_ == p) awake_hint_ = nullptr;
        --registered_;
    }
    void process_exited() noexcept { live_.fetch_sub(1); }

    stack_allocator stacks() const { return stack_allocator(stacks_); }
    // The pool itself (stack_pool::watch_depth, for tests and tuning).
    const std::shared_ptr<stack_pool>& stack_store() const noexcept { return stacks_; }

    void external_enter() noexcept { externals_.fetch_add(1); }
    void external_leave() {
        if (externals_.fetch_sub(1) == 1) poke_workers();
    }

    // Precondition: no fiber of this runtime is running. If the runtime is
    // deadlocked, writes the report, commits every abortable blocked waiter to
    // `aborted` and appends it to `to_wake`; the caller wakes them once it has
    // released its own locks. Serves the requests of quiescence.hpp too
    // (an abort_blocked() commits waiters the same way). Returns whether it
    // committed any waiter.
    bool find_deadlock(std::vector<waiter*>& to_wake);

    // find_deadlock() and the wakes, for a caller that holds no lock.
    bool check_deadlock();

    // quiescence.hpp. A request is served by find_deadlock, at the next
    // moment no fiber runs; the requester polls for the answer.
    void request_sample(bool describe);
    std::optional<quiet_sample> take_sample();
    void request_abort(std::string report);
    // Once the last request_abort was served: whether it failed processes.
    std::optional<bool> abort_outcome();

    // The report of the last deadlock found in this runtime (empty if none).
    std::string deadlock_report() const;

    // Worker policies to poke when the deadlock condition may have changed
    // without any fiber running (an external party left). The policies remove
    // them (clear_idle_hooks) before they go.
    void add_idle_hook(void (*fn)(void*), void* arg) {
        std::lock_guard lk(hooks_mutex_);
        hooks_.push_back({fn, arg});
    }
    void clear_idle_hooks() {
        std::lock_guard lk(hooks_mutex_);
        hooks_.clear();
    }

    // The service stored under `key`, made by make() (which returns a
    // shared_ptr<S>) if there is none yet. Sets `created` accordingly. Throws
    // usage_error once the runtime is shutting its services down.
    template <class S, class Make>
    std::shared_ptr<S> service(const void* key, Make&& make, bool& created) {
        std::lock_guard lk(services_mutex_);
        for (auto& [k, s] : services_) {
            if (k == key) {
                created = false;
                return std::static_pointer_cast<S>(s);
            }
        }
        if (services_stopped_) throw usage_error("a runtime service was requested after the root process ended");
        std::shared_ptr<S> s = make();
        services_.emplace_back(key, s);
        created = true;
        return s;
    }

    // Stops every service and waits for them; called by run() after the root
    // process returned. The services' objects live on until the runtime does.
    void stop_services();

    // Wakes of this runtime's processes by threads that are not its workers,
    // through Boost's wake (a process in a timed wait): Boost makes the
    // process runnable and only then notifies its worker's scheduler, so the
    // process may meanwhile run to its end and the whole run finish. run_scope
    // waits for such wakes to drain before it takes its workers down.
    void outside_wake_begin() noexcept { outside_wakes_.fetch_add(1, std::memory_order_relaxed); }
    void outside_wake_end() noexcept { outside_wakes_.fetch_sub(1, std::memory_order_release); }
    void drain_outside_wakes() const noexcept {
        while (outside_wakes_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
    }

    // The workers of a multi-thread runtime (scheduler_policy.hpp), or nullptr
    // on one thread. Fixed before the root process starts.
    worker_pool* workers() const noexcept { return workers_; }
    void set_workers(worker_pool* w) noexcept { workers_ = w; }

    // The event source idle workers poll instead of sleeping (idle_poller.hpp),
    // or nullptr. At most one per runtime.
    csp::idle_poller* idle_poller() const noexcept { return poller_.load(std::memory_order_acquire); }
    void set_idle_poller(csp::idle_poller* p) noexcept {
        poller_.store(p, std::memory_order_release);
        poke_workers();  // a sleeping worker should start polling (or stop)
    }

private:
    // Lock order: hooks_mutex_, then a worker pool's mutex (taken by the
    // hooks), then registry_mutex_ (taken by find_deadlock under the pool's).
    void poke_workers() {
        std::lock_guard lk(hooks_mutex_);
        for (auto& h : hooks_) h.fn(h.arg);
    }

    struct hook {
        void (*fn)(void*);
        void* arg;
    };

    std::shared_ptr<stack_pool> stacks_;
    const std::size_t threads_;
    std::atomic<long> live_{0};
    std::atomic<long> externals_{0};
    std::atomic<long> outside_wakes_{0};
    mutable std::mutex registry_mutex_;
    std::mutex hooks_mutex_;
    std::vector<hook> hooks_;
    process_record* head_ = nullptr;
    // The process that last proved the runtime not deadlocked. Checked first:
    // a long-lived sleeper (a timer loop, later an IO wait) keeps the idle
    // check O(1) however many processes are blocked.
    process_record* awake_hint_ = nullptr;
    long registered_ = 0;
    long daemons_ = 0;  // registered processes that are daemons
    std::string report_;
    std::uint64_t started_ = 0;  // processes ever registered and stopped (a sample's activity)
    std::uint64_t stopped_ = 0;
    // Requests of quiescence.hpp, under registry_mutex_.
    bool sample_wanted_ = false;
    bool sample_described_ = false;
    std::optional<quiet_sample> sample_;
    std::optional<std::string> abort_with_;
    std::optional<bool> aborted_;
    void serve_requests(std::vector<waiter*>& to_wake, bool externals);  // registry_mutex_ held, no fiber running
    void describe_blocked(process_record* p, std::string& out) const;

    std::mutex services_mutex_;
    std::vector<std::pair<const void*, std::shared_ptr<csp::service>>> services_;
    bool services_stopped_ = false;
    std::atomic<csp::idle_poller*> poller_{nullptr};
    worker_pool* workers_ = nullptr;
};

// The runtime whose worker the calling thread is (the caller of run()
// included), or nullptr on a plain thread. Set by run_scope for the length of
// the run; a waiter on a runtime's thread suspends its fiber, so that the
// thread's other fibers run on (waiter.hpp).
inline thread_local runtime_core* runtime_of_this_thread = nullptr;

// The scheduling policy of the one-thread runtime running on the calling
// thread, or nullptr: a wake on that thread of one of its processes in an
// untimed wait hands the fiber to its run-next slot directly (waiter.hpp),
// without Boost's schedule(), whose sleep-queue check such a wait never
// needs. Set and cleared by the policy itself (scheduler_policy.cpp).
inline thread_local single_thread_policy* one_thread_policy = nullptr;

}  // namespace csp::detail
