#pragma once
// The hand-over between the IO scheduler's process and the idle worker that
// polls on its behalf: the only code of the IO scheduler two threads run at
// once.
//
// The scheduler process parks in an alternation over its request channel and
// the events guard below. A worker thread with no fiber to run calls
// poll_until() (csp/idle_poller.hpp) and, if the scheduler is parked, polls
// the backend itself; when the poll yields results it hands them over and
// wakes the scheduler. A request that wakes the scheduler first makes it take
// the backend back (disable) before it touches it.
//
// Invariants (under lock_ unless said)
//  1. A worker polls only while the scheduler is parked (parked_ set) and
//     marks that with polling_; at most one worker polls at a time.
//  2. The scheduler does not leave its alternation (disable returns) while
//     polling_ is set: it wakes the poll through the self-pipe and waits. So
//     the backend and results_ are never used by two threads at once.
//  3. results_ready_ is set, with the results (or failure_) in place, before
//     the parked scheduler's wait node is committed; the commit is the
//     waiter's (csp/waiter.hpp invariant 2), so a wake-up is never lost and
//     never doubled.
//  4. results_ and failure_ belong to the worker while polling_ is set and
//     to the scheduler process otherwise.
//  5. Only a poll that may block consumes a wake-up from the self-pipe;
//     polls that cannot (the scheduler's own, a busy worker's) leave it
//     there (backend::poll_now). A wake-up is sent for the idle worker that
//     has begun a poll attempt, and that worker may reach its poll only
//     after such a poll ran: taken by it, the wake-up would be lost and the
//     worker would block in its poll although it was told to look for work.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "csp/guard.hpp"
#include "csp/spinlock.hpp"
#include "iosched/backend.hpp"
#include "iosched/registration_table.hpp"

namespace csp::io::detail {

class handover {
public:
    // `table` tells how many registrations are armed: a worker spins before
    // it sleeps (for `spin`) only when something may become ready.
    handover(backend& b, const registration_table& table, clock::duration spin);

    // The scheduler's guard: ready when poll results were handed over.
    class events_guard;

    // The worker's side. False if the scheduler is not parked, another worker
    // polls, or results are waiting: the worker should sleep as usual.
    bool poll_until(clock::time_point until) noexcept;
    // Any thread: interrupt a poll in progress.
    void wake() noexcept;

    // The scheduler's side, after the guard fired: the handed-over results
    // (cleared by the caller once dispatched). Throws csp::error if the poll
    // failed.
    std::vector<fd_event>& results();

    std::uint64_t polls() const noexcept { return polls_.load(std::memory_order_relaxed); }
    std::uint64_t pipe_wakes() const noexcept { return pipe_wakes_.load(std::memory_order_relaxed); }

private:
    // The idle worker's poll (polling_ set): spin, then block until `until`.
    void poll_blocking(clock::time_point until);

    backend& backend_;
    const registration_table& table_;
    clock::duration spin_;

    csp::spinlock lock_;
    csp::wait_node* parked_ = nullptr;
    bool polling_ = false;
    bool results_ready_ = false;
    std::vector<fd_event> results_;
    std::string failure_;  // why a poll failed

    std::atomic<std::uint64_t> polls_{0};
    std::atomic<std::uint64_t> pipe_wakes_{0};
};

class handover::events_guard final : public csp::guard_base<events_guard> {
public:
    explicit events_guard(handover& h) : h_(h) {}

    bool try_complete() override;
    bool enable(csp::wait_node& n) override;
    void disable(csp::wait_node& n) override;
    void complete(csp::wait_node& n) override;
    void describe(std::string& out) const override;
    // The outside world can wake the scheduler while it watches something.
    bool reachable_from_outside() const override { return h_.table_.armed() > 0; }

private:
    handover& h_;
};

}  // namespace csp::io::detail
