#pragma once
// How the threads of one runtime go idle and how they are woken: the one
// protocol both scheduling policies (scheduler_policy.hpp) follow.
//
// A thread with no fiber to run calls idle(). It spins a moment first (only
// if other threads of the runtime may hand it work; tuning.hpp), then
// announces itself as a sleeper, looks for work one last time, and sleeps:
// in the runtime's idle poller (csp/idle_poller.hpp) if one is installed and
// no other thread waits in it, otherwise on a condition variable. Three
// things wake it: notify(t) (Boost queued a fiber woken from elsewhere for
// thread t), work_added() (a thread queued work any thread may take), and
// wake_all() (the idle poller changed; a hook of the runtime).
//
// No lost wake-up. A sleeper increments sleepers_ (and a spinner decrements
// spinners_) before its last look for work; a thread that adds work queues
// it before it reads sleepers_ and spinners_, with a sequentially consistent
// fence between (work_added) matching the one before the look. If the look
// came first, the adder sees the sleeper (and no spinner), bumps epoch_
// under mutex_, which the sleeper's wait checks; if the queueing came first,
// the look finds the work. A spinner the adder counted on has not made its
// last look yet, so it finds the work or, if it took other work instead,
// passes the wake-up on (idle()). Likewise a wake-up held back because one
// is in flight (waking_): every thread clears waking_ before its last look
// and when it leaves idle(), so the flag never outlives a look that could
// miss the work. notify() sets the
// thread's flag under mutex_, which the sleeper reads under mutex_ before it
// sleeps and in its wait. A thread waiting in the poller is a sleeper too,
// and each of the three wake-ups that concerns it also wakes the poller,
// once per poll.
//
// Someone polls. A poll attempt returns false at once while the poller's
// owner (the IO scheduler process) is not parked; the thread on which the
// owner parks goes idle right after and polls itself. Unless another
// thread's failed attempt holds polling_ at that moment: so a thread that
// finds polling_ taken records it (poll_left_, under mutex_), and the
// attempting thread, finding its attempt failed and someone left behind,
// tries again instead of sleeping.
//
// Lazy sleepers. A thread woken by work_added() that finds nothing it may
// take (the work's owner ran it first, or it is not stealable yet) stops
// taking wake-ups for requeued work until it has run something: it sleeps
// on lazy_cv_, which notify(), wake_all() and new work signal (the polling
// thread polls without a requeue waking the poll), and looks once per
// tuning::busy_watch while another thread holds work. Without this, an idle
// worker beside one busy with a ping-pong is woken for each process the
// busy one queues and runs again a moment later: a futex wake-up (or a
// write to the poller's self-pipe) on the busy thread's side, then a spin
// that reads the lines it writes, thousands of times a second (Commstime on
// two threads: 73-170 ns per communication, against 61-68 with lazy
// sleepers; with an fd armed in the IO scheduler 88-99 against 76-82).
// Requeued work a lazy sleeper could take waits at most busy_watch; new
// work (a process that has not run yet) wakes it as any sleeper, since a
// par that starts right after a ring's messages would otherwise run its
// branches on one worker for up to busy_watch (two 90 us branches took
// 174-177 us instead of 94-96). Once nobody holds work a lazy sleeper
// sleeps as any sleeper (leaving lazy_sleepers_, then a last look, the
// argument above). An adder of new work that counted a sleeper as eager
// signals lazy_cv_ too, after it bumped added_epoch_ under mutex_: that
// sleeper may have turned lazy since, under mutex_, and then sees the bump.
//
// Deadlock. The last thread to become a sleeper, with no notification
// pending, holds the only moment when no fiber of the runtime runs (every
// other thread is in idle() and cannot leave it while mutex_ is held): it
// walks the process graph then (runtime_core::find_deadlock).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "csp/detail/runtime_core.hpp"

namespace csp::detail {

// What the protocol knows of one thread of the runtime.
class idle_thread {
public:
    // Work this thread could run that the protocol cannot see: its own ready
    // fibers, or another's it may take. Read after the thread announced itself.
    virtual bool has_work() const noexcept = 0;
    // Work this thread cannot take yet but probably soon: it keeps spinning
    // (up to tuning::idle_spin_expecting) rather than sleep.
    virtual bool work_expected() const noexcept { return false; }
    // How long this thread may sleep at most once it found no work; asked
    // just before it sleeps.
    virtual std::chrono::steady_clock::time_point sleep_limit() noexcept {
        return std::chrono::steady_clock::time_point::max();
    }
    // How many fibers this thread has run so far (any count that grows when
    // it runs one): idle() tells by it whether the thread ran anything since
    // its last wake-up for nothing.
    virtual std::uint64_t runs() const noexcept { return 0; }

protected:
    ~idle_thread() = default;

private:
    friend class idle_protocol;
    // Set under the protocol's mutex; read without it while spinning.
    std::atomic<bool> notified_{false};
    // runs() when idle() last returned from a wake-up for nothing (only this
    // thread reads and writes it); ~0 otherwise.
    std::uint64_t woken_for_nothing_ = ~std::uint64_t{0};
};

class idle_protocol {
public:
    idle_protocol(std::size_t threads, runtime_core* rt) : threads_(threads), rt_(rt) {}
    idle_protocol(const idle_protocol&) = delete;
    idle_protocol& operator=(const idle_protocol&) = delete;

    // Makes `t` one of the runtime's threads; before it first idles.
    void attach(idle_thread& t);

    // `self` has nothing to run: returns when it may have, or at `until`.
    void idle(idle_thread& self, std::chrono::steady_clock::time_point until);

    // Boost queued a fiber for `t` (its remote-ready queue): `t` must run its
    // dispatcher soon. The flag persists, so a notify just before `t` goes
    // idle is not lost.
    void notify(idle_thread& t);
    // What queued work is to a sleeper that might take it.
    enum class work {
        // A process its worker will probably run again in a moment: one its
        // run-next slot displaced (a ring of processes on one worker queues
        // one per message), or one woken by a timer or yielding. Lazy
        // sleepers do not hear of it.
        requeued,
        // A process that has not run yet, one woken from outside the
        // runtime's workers, or one sent back to the worker it ran on beside
        // its waker (scheduler_policy.cpp, hand_off): work the waker's
        // worker will not run in a moment. Every sleeper hears of it.
        added,
    };
    // Work that any thread may take was queued. Cheap when nobody sleeps or
    // some thread is spinning for work already (it will find this): at most
    // one thread is woken per spinner that gives up (Go's wake throttling).
    void work_added(work w);
    // Work that its owner may run itself was made ready (a run-next slot
    // filled): wakes an eager sleeper to watch it, as work_added(requeued)
    // does, but looks first without a fence, so that a thread busy with a
    // ring of processes pays two relaxed loads per message. A wake-up missed
    // here loses nothing: the owner runs the work at its next pick.
    void work_held() {
        if (sleepers_.load(std::memory_order_relaxed) == lazy_sleepers_.load(std::memory_order_relaxed)) return;
        if (spinners_.load(std::memory_order_relaxed) != 0 || waking_.load(std::memory_order_relaxed)) return;
        work_added(work::requeued);
    }
    // Every thread looks again (the poller changed, or a runtime hook).
    void wake_all();

private:
    // Under mutex_: the poller to wake for a wake-up that concerns the
    // polling thread, if this poll was not woken yet; otherwise nullptr.
    idle_poller* poll_to_wake_locked(bool concerns_poller) {
        if (!concerns_poller || poller_ == nullptr || poller_woken_) return nullptr;
        poller_woken_ = true;
        return poller_;
    }
    // Looks for work until `until` or the spin's end (tuning::idle_spin, up
    // to idle_spin_expecting if `expecting` and work is expected); true if
    // it found some.
    bool spin(idle_thread& self, std::chrono::steady_clock::time_point until, bool expecting);
    // idle()'s spin and sleep, lazily if `lazy`; true if a wake-up for work
    // found nothing this thread may take.
    bool sleep_once(idle_thread& self, std::chrono::steady_clock::time_point until, bool lazy);

    const std::size_t threads_;
    runtime_core* const rt_;
    std::mutex mutex_;
    std::vector<idle_thread*> attached_;  // under mutex_
    std::condition_variable cv_;
    std::condition_variable lazy_cv_;  // lazy sleepers wait here
    std::uint64_t epoch_ = 0;          // bumped by wake_all
    std::uint64_t work_epoch_ = 0;     // bumped by work_added
    std::uint64_t added_epoch_ = 0;    // bumped by work_added(work::added)
    std::atomic<std::size_t> sleepers_{0};
    std::atomic<std::size_t> lazy_sleepers_{0};  // of sleepers_: not woken by requeued work
    std::atomic<std::size_t> spinners_{0};  // threads in spin()
    // A wake-up from work_added() is on its way and its sleeper has not left
    // idle() yet: it will look for work, so further work_added() calls need
    // not wake anyone (without this, a busy thread issues a wake-up per
    // queued fiber during the tens of microseconds a sleeper takes to wake).
    std::atomic<bool> waking_{false};
    // The thread waiting in the runtime's idle poller and that poller (at
    // most one thread polls; the others sleep on cv_). Under mutex_.
    idle_thread* polling_ = nullptr;
    idle_poller* poller_ = nullptr;
    bool poller_woken_ = false;  // a wake() was sent during this poll already
    // A thread found polling_ taken and sleeps on cv_ instead, during the
    // current poll attempt: if that attempt does not run, the polling thread
    // tries again (idle()).
    bool poll_left_ = false;
};

}  // namespace csp::detail
