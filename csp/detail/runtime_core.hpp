#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "csp/detail/process_record.hpp"
#include "csp/detail/stack_pool.hpp"

namespace csp::detail {

// Shared state of one runtime that processes and waiters touch directly.
//
// Deadlock accounting. `active_` counts processes that are not blocked on a CSP
// event (channel, alternation without timeout, barrier, par join):
//   - +1 when a process is spawned, -1 when it finishes;
//   - -1 by a process just before it suspends in an untimed wait;
//   - +1 by whoever commits such a waiter, before waking it.
// Only an active process (or an external thread) can commit a waiter, so
// active_ can reach 0 only when every live process is blocked and no wake is in
// flight. A process sleeping or waiting with a deadline stays active: a timer
// will wake it. The runtime is deadlocked when active_ == 0 while processes are
// still live and no external party (a thread outside the runtime that declared
// it may still use the runtime's channels) exists.
class runtime_core {
public:
    explicit runtime_core(std::size_t stack_size)
        : stacks_(std::make_shared<stack_pool>(stack_size)) {}

    // Accounting of a process's life: spawned by its (active) parent, started
    // and stopped on its own fiber, exited as its very last act.
    void process_spawned() noexcept {
        active_.fetch_add(1);
        live_.fetch_add(1);
    }
    void process_started(process_record* p) {
        std::lock_guard lk(registry_mutex_);
        p->next = head_;
        if (head_) head_->prev = p;
        head_ = p;
    }
    void process_stopped(process_record* p) {
        std::lock_guard lk(registry_mutex_);
        if (p->prev) p->prev->next = p->next; else head_ = p->next;
        if (p->next) p->next->prev = p->prev;
    }
    void process_exited() noexcept {
        live_.fetch_sub(1);
        active_.fetch_sub(1);
    }

    stack_allocator stacks() const { return stack_allocator(stacks_); }

    void blocking() noexcept { active_.fetch_sub(1); }
    void waking() noexcept { active_.fetch_add(1); }

    void external_enter() noexcept { externals_.fetch_add(1); }
    void external_leave() {
        if (externals_.fetch_sub(1) == 1 && active_.load() == 0) poke_workers();
    }

    // Called by an idle worker thread. If the runtime is deadlocked, builds the
    // report once, aborts every blocked waiter and returns true.
    bool check_deadlock();

    // The report of the last deadlock found in this runtime (empty if none).
    std::string deadlock_report() const {
        std::lock_guard lk(registry_mutex_);
        return report_;
    }

    // Worker policies to poke when the deadlock condition may have changed
    // without any fiber running (an external party left).
    void add_idle_hook(void (*fn)(void*), void* arg) {
        std::lock_guard lk(registry_mutex_);
        hooks_.push_back({fn, arg});
    }

private:
    std::shared_ptr<stack_pool> stacks_;
    std::atomic<long> active_{0};
    std::atomic<long> live_{0};
    std::atomic<long> externals_{0};
    void poke_workers() {
        std::lock_guard lk(registry_mutex_);
        for (auto& h : hooks_) h.fn(h.arg);
    }

    struct hook {
        void (*fn)(void*);
        void* arg;
    };
    mutable std::mutex registry_mutex_;
    std::vector<hook> hooks_;
    process_record* head_ = nullptr;
    std::string report_;
};

}  // namespace csp::detail
