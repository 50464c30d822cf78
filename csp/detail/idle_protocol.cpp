#include "csp/detail/idle_protocol.hpp"

#include <algorithm>
#include <utility>

#include "csp/detail/tuning.hpp"
#include "csp/spinlock.hpp"
#include "csp/waiter.hpp"

namespace csp::detail {

using time_point = std::chrono::steady_clock::time_point;

void idle_protocol::attach(idle_thread& t) {
    std::lock_guard lk(mutex_);
    attached_.push_back(&t);
}

bool idle_protocol::spin(idle_thread& self, time_point until, bool expecting) {
    const time_point start = std::chrono::steady_clock::now();
    const time_point spin_until = std::min(until, start + tuning::idle_spin);
    const time_point expecting_until = std::min(until, start + tuning::idle_spin_expecting);
    spinners_.fetch_add(1);
    for (unsigned i = 1;; ++i) {
        if (self.notified_.load(std::memory_order_relaxed) || self.has_work()) {
            spinners_.fetch_sub(1);
            return true;
        }
        if (i % tuning::idle_spin_clock_every == 0) {
            const time_point now = std::chrono::steady_clock::now();
            if (now >= spin_until && (!expecting || now >= expecting_until || !self.work_expected())) {
                spinners_.fetch_sub(1);
                return false;
            }
        }
        // Look less often than we could: each look reads lines the busy
        // threads write, and makes their next write a cache miss.
        for (unsigned k = 0; k < tuning::idle_spin_pauses; ++k) spin_pause();
    }
}

void idle_protocol::idle(idle_thread& self, time_point until) {
    // Lazy if the last call ended in a wake-up for nothing and the thread has
    // run nothing since.
    const bool lazy = self.woken_for_nothing_ == self.runs();
    self.woken_for_nothing_ = sleep_once(self, until, lazy) ? self.runs() : ~std::uint64_t{0};
}

bool idle_protocol::sleep_once(idle_thread& self, const time_point until, const bool lazy) {
    // After a wake-up for nothing the spin is short: the work this thread
    // expects is the kind it was just woken for and could not take.
    if (threads_ > 1 && spin(self, until, !lazy)) {
        self.notified_.store(false, std::memory_order_relaxed);
        // Other work may have been queued while wake-ups were held back for
        // this spinner, new work too: pass one on (a no-op unless someone
        // sleeps).
        work_added(work::added);
        return false;
    }
    std::unique_lock lk(mutex_);
    // Announce, then look (the no-lost-wake-up argument in the header).
    sleepers_.fetch_add(1);
    // A wake-up held back for one in flight must not be lost if that one went
    // to a thread that had already left: clear before the last look, so that
    // work queued after it wakes this thread.
    waking_.store(false);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    auto leave = [&] {
        self.notified_.store(false, std::memory_order_relaxed);
        sleepers_.fetch_sub(1);
        waking_.store(false);  // this thread looks for work next
        return false;
    };
    if (self.notified_.load(std::memory_order_relaxed) || self.has_work()) return leave();
    const std::uint64_t seen = epoch_;
    std::uint64_t seen_work = work_epoch_;

    bool all_idle = sleepers_.load() == threads_;
    for (const idle_thread* t : attached_) all_idle = all_idle && !t->notified_.load(std::memory_order_relaxed);
    std::vector<waiter*> to_wake;
    if (all_idle && rt_->find_deadlock(to_wake)) {
        // The aborted waiters are woken once mutex_ is released: a wake may
        // queue work, which takes it (work_added).
        leave();
        lk.unlock();
        for (waiter* w : to_wake) w->wake();
        return false;
    }

    time_point limit = std::min(until, self.sleep_limit());
    auto notified = [&] { return epoch_ != seen || self.notified_.load(std::memory_order_relaxed); };
    auto woken = [&] { return notified() || work_epoch_ != seen_work; };
    // A lazy sleeper (header) looks once per sleep_limit() (busy_watch) while
    // another thread holds work, and wakes for new work.
    bool lazy_now = lazy && limit != until;
    const std::uint64_t seen_added = added_epoch_;
    auto lazy_woken = [&] { return notified() || added_epoch_ != seen_added; };
    if (lazy_now) {
        lazy_sleepers_.fetch_add(1);
        // A wake-up on its way may have been meant for this thread, which no
        // longer hears them: let the next one go to another.
        waking_.store(false);
    }
    // Once no other thread holds work, a lazy sleeper becomes an eager one:
    // announced, then a last look, as above with lazy_sleepers_ in place of
    // sleepers_. Returns whether that look found work.
    auto turn_eager = [&] {
        lazy_now = false;
        lazy_sleepers_.fetch_sub(1);
        waking_.store(false);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        seen_work = work_epoch_;
        return self.has_work();
    };
    // Whether a lazy sleeper whose sleep or poll ran out should go on
    // sleeping lazily (with `limit` renewed): nothing for it yet.
    auto stay_lazy = [&] {
        if (lazy_woken() || std::chrono::steady_clock::now() >= until || self.has_work()) return false;
        limit = std::min(until, self.sleep_limit());
        return limit != until || !turn_eager();
    };
    // How this call ends: true if the thread was woken for work and found
    // none it may take, or is a lazy sleeper with nothing to do yet (the
    // next call sleeps lazily at once, after a short spin).
    auto end = [&] {
        const bool for_nothing =
            !notified() && (lazy_now || work_epoch_ != seen_work) && !self.has_work();
        if (lazy_now) lazy_sleepers_.fetch_sub(1);
        leave();
        return for_nothing;
    };
    if (idle_poller* p = rt_->idle_poller(); p && polling_ == nullptr) {
        polling_ = &self;
        poller_ = p;
        bool polled = false;
        for (;;) {
            poller_woken_ = false;
            poll_left_ = false;
            lk.unlock();
            polled = p->poll_until(limit);
            lk.lock();
            if (polled && lazy_now && stay_lazy()) continue;
            if (polled || woken()) break;
            // The poll did not run (its owner was busy: the IO scheduler not
            // parked yet). A thread that went to sleep meanwhile left the
            // poll to this one; if the owner parked after this attempt
            // looked and before that thread looked, nobody would poll while
            // events wait. Try again; with nobody left behind, the thread on
            // which the owner parks polls when it goes idle.
            if (!poll_left_) break;
        }
        polling_ = nullptr;
        poller_ = nullptr;
        // A poll that did not run falls through to the condition variable.
        if (polled || woken()) return end();
    } else if (p) {
        poll_left_ = true;
    }
    auto sleep = [&](auto& cv, auto&& pred) {
        if (limit == time_point::max()) cv.wait(lk, pred);
        else cv.wait_until(lk, limit, pred);
    };
    while (lazy_now) {
        sleep(lazy_cv_, lazy_woken);
        if (!stay_lazy()) return end();
    }
    sleep(cv_, woken);
    // Woken by work_added for work this thread finds it cannot take (its
    // owner ran it, or it is not stealable yet): the next call spins a
    // little, then sleeps lazily (header).
    return end();
}

void idle_protocol::notify(idle_thread& t) {
    idle_poller* p;
    {
        std::lock_guard lk(mutex_);
        t.notified_.store(true, std::memory_order_relaxed);
        p = poll_to_wake_locked(polling_ == &t);
    }
    cv_.notify_all();
    lazy_cv_.notify_all();
    if (p) p->wake();
}

void idle_protocol::work_added(const work w) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // Lazy sleepers are counted in sleepers_ too: the difference may be read
    // torn, but a sleeper that counts as lazy sleeps a bounded time.
    const std::size_t sleepers = sleepers_.load(std::memory_order_relaxed);
    const std::size_t eager = sleepers - lazy_sleepers_.load(std::memory_order_relaxed);
    if (w == work::requeued ? eager == 0 : sleepers == 0) return;
    if (spinners_.load(std::memory_order_relaxed) != 0) return;
    if (waking_.exchange(true)) return;
    idle_poller* p;
    {
        std::lock_guard lk(mutex_);
        ++work_epoch_;
        if (w == work::added) ++added_epoch_;
        p = poll_to_wake_locked(true);
    }
    if (eager != 0) cv_.notify_one();
    // New work wakes a lazy sleeper as well, even if an eager one was
    // counted: that one may have turned lazy since (it counts itself lazy
    // under mutex_, after this thread's read).
    if (w == work::added) lazy_cv_.notify_one();
    if (p) p->wake();
}

void idle_protocol::wake_all() {
    idle_poller* p;
    {
        std::lock_guard lk(mutex_);
        ++epoch_;
        p = poll_to_wake_locked(true);
    }
    cv_.notify_all();
    lazy_cv_.notify_all();
    if (p) p->wake();
}

}  // namespace csp::detail
