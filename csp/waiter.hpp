#pragma once
// The waiter: one blocked fiber (or plain thread) and its registrations.
//
// Everything that can make a process wait (channel ends, alternation guards,
// barriers, par joins, and outside csp/ sockets and ports) follows one protocol,
// which is what makes alternation over mixed event sources safe.
//
// Invariants
//  1. A waiter commits exactly once, by a compare-and-swap of its state from
//     `waiting` to the index of the guard that fired (or `retry`, `aborted`).
//     The winner of that CAS alone completes the operation; everyone else sees
//     the node as stale and skips it.
//  2. Whoever commits a waiter for someone else (a partner, poison, retire)
//     unlinks the waiter's node, does the data transfer and wakes the waiter,
//     all while holding the lock of the event source where it found the node;
//     the wake is its last access to the node or the waiter. The waiter may
//     therefore return as soon as it resumes, without taking that lock again
//     (a plain channel read or write does exactly that), and its stack may go.
//     An alternation takes each other source's lock again to unlink its
//     nodes there (guard disable), since those may still be linked.
//     A wake may go on touching the scheduler the waiter sleeps on after the
//     waiter could already run; a runtime's workers are kept up until such a
//     wake from outside is done (runtime_core::outside_wake_begin).
//  3. Each commit by someone else is followed by exactly one wake, and the
//     waiter consumes it by suspending exactly once, even when it learns of the
//     commit before it got to suspend (absorb()). A timed wait resumed by its
//     timer has used up its waker's epoch, so a late wake is stale and harmless.
//  4. An untimed waiter of a process publishes itself in the process record
//     (blocked_on) while suspended, for deadlock detection (runtime_core.hpp).
//  5. How a waiter sleeps and is woken is fixed at construction, because a
//     waker may commit the waiter before it suspends:
//       - an untimed waiter of a process in a multi-thread runtime parks and
//         is handed off to its waker's worker (detail/handoff.hpp);
//       - every other waiter suspends its fiber and is woken through its
//         Boost waker, except an untimed one of a one-thread runtime woken on
//         that runtime's thread, which is scheduled directly (wake_fiber).
//     An untimed waiter of a one-thread runtime makes no waker of its own:
//     creating one is an atomic increment of the fiber's epoch on every
//     blocking operation, and only a wake from another thread needs one, so
//     that wake creates it (wake_fiber). No stale waker can match the epoch
//     such a wait leaves as it found it: every waker a fiber ever made was
//     either used (a wake or a timer moved the epoch past it) or died with
//     its waiter unused and unshared (invariant 3: a committed waiter is
//     woken before it ends).
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "csp/error.hpp"

namespace boost::fibers {
class context;
}

namespace csp::detail {
class process_record;
}

namespace csp {

using clock = std::chrono::steady_clock;

// What a waiter waits on, as the deadlock detector sees it. Lives on the
// waiting fiber's stack for the duration of the wait.
class wait_site {
public:
    // Appends what is awaited ("reading from channel 'x'"), for reports.
    virtual void describe(std::string& out) const = 0;
    // Could a thread outside the runtime complete this wait? If so, the
    // waiting process is never reported as deadlocked.
    virtual bool reachable_from_outside() const { return false; }

protected:
    ~wait_site() = default;
};

// The blocking and waking steps are out of line (waiter.cpp), so that
// Boost.Fiber stays out of the public headers.
class waiter {
public:
    static constexpr int waiting = -1;
    static constexpr int retry = -2;    // the waiter withdrew to look again
    static constexpr int aborted = -3;  // the runtime found a deadlock

    // `timed` says whether the wait will have a deadline; only untimed waits
    // can be part of a deadlock (invariant 4).
    explicit waiter(bool timed = false) noexcept;

    waiter(const waiter&) = delete;
    waiter& operator=(const waiter&) = delete;

    int state() const noexcept { return state_.load(std::memory_order_acquire); }
    bool is_waiting() const noexcept { return state() == waiting; }

    // Invariant 1: the single compare-and-swap that decides the waiter's fate.
    bool commit(int index) noexcept {
        int expected = waiting;
        return state_.compare_exchange_strong(expected, index, std::memory_order_acq_rel,
                                              std::memory_order_acquire);
    }

    // Wake after a successful commit() made by someone other than the waiter.
    void wake() noexcept;

    // Suspend until committed. With a deadline (only for a waiter made
    // `timed`), commits `timeout_index` itself if the deadline passes first.
    // Returns the committed state.
    int wait(clock::time_point deadline = clock::time_point::max(), int timeout_index = retry) {
        if (deadline == clock::time_point::max()) {
            if (proc_ == nullptr && abortable && nobody_could_wake()) return aborted;
            suspend_published();
            return state();
        }
        return wait_timed(deadline, timeout_index);
    }

    // The waiter found itself committed by someone else before it suspended:
    // consume the wake that is on its way (invariant 3).
    int absorb() {
        suspend_published();
        return state();
    }

    // The waiter was committed to `aborted`: throw the runtime's report.
    [[noreturn]] void throw_aborted() const;

    // What the waiter waits on; must be set before the waiter can block.
    void set_site(const wait_site* site) noexcept { site_ = site; }
    const wait_site* site() const noexcept { return site_; }

    // Par joins are not aborted on deadlock: they end when their children do.
    bool abortable = true;

private:
    int wait_timed(clock::time_point deadline, int timeout_index);
    void wake_fiber() noexcept;
    void suspend_published();
    // A plain thread about to wait for good while it is the process's only
    // thread (so no runtime runs either): commits the waiter to `aborted`,
    // as the runtime's deadlock detector does for a process. Go reports the
    // same program ("all goroutines are asleep").
    bool nobody_could_wake() noexcept;

    std::atomic<int> state_{waiting};
    boost::fibers::context* ctx_;
    detail::process_record* proc_;
    enum class sleep : std::uint8_t { hand_off, fiber };
    // sleep::fiber and not published_: this wait's Boost waker (waiter.cpp;
    // trivially copyable).
    alignas(void*) unsigned char waker_[2 * sizeof(void*)];
    bool published_;
    sleep how_;
    const wait_site* site_ = nullptr;
};

// A waiter's registration with one event source. An alternation owns one node
// per guard; a plain channel operation owns one.
struct wait_node {
    enum class outcome : std::uint8_t { pending, done, poisoned, retired };

    waiter* owner = nullptr;
    int index = 0;         // the value owner->state takes when this node commits
    void* slot = nullptr;  // the event source's data exchange area
    outcome result = outcome::pending;

    // Links of the event source's queue; owned by whoever holds its lock.
    wait_node* prev = nullptr;
    wait_node* next = nullptr;
    bool linked = false;

    bool commit() noexcept { return owner->commit(index); }
};

}  // namespace csp
