// The idle protocol (csp/detail/idle_protocol.hpp) driven by plain threads:
// a wake-up that lands between a thread's last look for work and its sleep is
// not lost, nor one that comes before it goes idle at all.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <utility>

#include "csp/detail/idle_protocol.hpp"

using csp::detail::idle_protocol;
using work = idle_protocol::work;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

struct quiet_thread final : csp::detail::idle_thread {
    bool has_work() const noexcept override { return false; }
};

// A runtime with no processes: the deadlock walk finds nothing.
csp::detail::runtime_core no_processes(64 * 1024, 1);

}  // namespace

// The order the protocol's argument needs: a sleeper is counted before its
// last look, so work queued just after that look sees it and wakes it.
TEST(idle_protocol, a_sleeper_hears_work_added_just_after_its_last_look) {
    idle_protocol idle(1, &no_processes);
    struct racing_thread final : csp::detail::idle_thread {
        idle_protocol* idle;
        mutable std::future<void> producer;
        // The last look finds nothing; the work is queued right after it,
        // while the sleeper still holds the protocol's lock.
        bool has_work() const noexcept override {
            if (!producer.valid()) {
                producer = std::async(std::launch::async, [p = idle] { p->work_added(work::requeued); });
                // The producer either finishes (it saw no sleeper) or waits
                // for the lock the sleeper holds until it sleeps.
                producer.wait_for(200ms);
            }
            return false;
        }
    } self;
    self.idle = &idle;
    idle.attach(self);
    const auto start = steady::now();
    idle.idle(self, start + 20s);
    EXPECT_LT(steady::now() - start, 10s) << "the wake-up of work queued after the last look was lost";
    self.producer.get();
}

TEST(idle_protocol, a_notify_before_the_thread_goes_idle_is_kept) {
    idle_protocol idle(1, &no_processes);
    quiet_thread self;
    idle.attach(self);
    idle.notify(self);
    const auto start = steady::now();
    idle.idle(self, start + 20s);
    EXPECT_LT(steady::now() - start, 10s);
    // Consumed: the next idle sleeps until its deadline.
    const auto again = steady::now();
    idle.idle(self, again + 100ms);
    EXPECT_GE(steady::now() - again, 100ms);
}

TEST(idle_protocol, wake_all_and_work_added_wake_sleepers_of_a_pool) {
    idle_protocol idle(2, &no_processes);
    quiet_thread a, b;
    idle.attach(a);
    idle.attach(b);
    for (int round = 0; round < 50; ++round) {
        const auto deadline = steady::now() + 20s;
        std::atomic<int> woke{0};
        std::thread ta([&] { idle.idle(a, deadline); ++woke; });
        std::thread tb([&] { idle.idle(b, deadline); ++woke; });
        // A wake-up only concerns threads already idle: repeat it until both
        // left (work_added wakes one sleeper per call).
        while (woke.load() < 2 && steady::now() < deadline) {
            std::this_thread::sleep_for(1ms);
            if (round % 2) idle.wake_all();
            else idle.work_added(work::requeued);
        }
        ta.join();
        tb.join();
        EXPECT_EQ(woke.load(), 2);
        EXPECT_LT(steady::now(), deadline) << "round " << round;
    }
}

// Regression (a hang seen once in io_deadlock with four threads): a poll
// attempt that finds the IO scheduler not parked returns false at once. If
// the scheduler parks just then and its thread goes idle while the failed
// attempt still holds the poll, that thread sleeps on the condition
// variable, the attempting thread too, and nobody polls: an fd that becomes
// ready later wakes no one. The attempting thread must try again.
TEST(idle_protocol, a_thread_left_out_of_a_poll_that_could_not_run_is_not_left_without_a_poller) {
    struct scripted_poller final : csp::idle_poller {
        std::mutex m;
        std::condition_variable cv;
        int attempts = 0;
        bool parked = false;  // the owner waits for events: a poll may run
        bool event = false;
        bool woken = false;
        std::promise<void> first_attempt;
        bool poll_until(steady::time_point until) noexcept override {
            std::unique_lock lk(m);
            if (++attempts == 1) {
                // The owner is busy; it parks while this attempt is still
                // on its way out, after the other thread has gone idle.
                first_attempt.set_value();
                lk.unlock();
                std::this_thread::sleep_for(300ms);
                lk.lock();
                parked = true;
                return false;
            }
            if (!parked) return false;
            cv.wait_until(lk, until, [&] { return event || woken; });
            woken = false;
            return true;
        }
        void wake() noexcept override {
            std::lock_guard lk(m);
            woken = true;
            cv.notify_all();
        }
    } poller;
    csp::detail::runtime_core rt(64 * 1024, 2);
    rt.set_idle_poller(&poller);
    idle_protocol idle(2, &rt);
    quiet_thread a, b;
    idle.attach(a);
    idle.attach(b);
    const auto deadline = steady::now() + 20s;
    std::atomic<int> left{0};
    std::thread ta([&] { idle.idle(a, deadline); ++left; });
    poller.first_attempt.get_future().wait();
    std::thread tb([&] { idle.idle(b, deadline); ++left; });  // finds the poll taken
    std::this_thread::sleep_for(500ms);  // the first attempt has failed by now
    {
        std::lock_guard lk(poller.m);
        poller.event = true;  // an fd became ready
        poller.cv.notify_all();
    }
    const auto until = steady::now() + 5s;
    while (left.load() == 0 && steady::now() < until) std::this_thread::sleep_for(1ms);
    EXPECT_EQ(left.load(), 1) << "nobody polled after the scheduler parked";
    {
        std::lock_guard lk(poller.m);
        EXPECT_GE(poller.attempts, 2);
    }
    idle.wake_all();
    ta.join();
    tb.join();
    rt.set_idle_poller(nullptr);
}

namespace {

// A worker beside another that holds work (sleep_limit() is finite) and
// that finds nothing to take until `work` is set.
struct beside_busy_thread : csp::detail::idle_thread {
    std::atomic<bool> work{false};
    std::atomic<bool> others_hold_work{true};
    // How often it looks by itself while others hold work.
    steady::duration watch = 1ms;
    bool has_work() const noexcept override { return work.load(); }
    steady::time_point sleep_limit() noexcept override {
        return others_hold_work.load() ? steady::now() + watch : steady::time_point::max();
    }
};

// Calls work_added() every millisecond until `t` has returned from the
// idle() it runs: the wake-up it takes to return.
void wake_until_returned(idle_protocol& idle, std::thread& t, std::atomic<bool>& returned,
                         work w = work::requeued) {
    const auto until = steady::now() + 10s;
    while (!returned.load() && steady::now() < until) {
        idle.work_added(w);
        std::this_thread::sleep_for(1ms);
    }
    t.join();
}

// `n` calls of work_added(requeued), a millisecond apart: what a lazy
// sleeper must sleep through.
void requeue(idle_protocol& idle, int n) {
    for (int i = 0; i < n; ++i) {
        idle.work_added(work::requeued);
        std::this_thread::sleep_for(1ms);
    }
}

// One idle() of `self` woken by work_added() for work it cannot take: its
// next idle() sleeps lazily. False if work_added() did not wake it. Its own
// look is put off meanwhile: an idle() that ends by its look, not by the
// wake-up, is no wake-up for nothing, and the next one would not be lazy
// (which a loaded machine made happen with the 1 ms look).
bool wake_for_nothing(idle_protocol& idle, beside_busy_thread& self, steady::time_point deadline) {
    const auto watch = std::exchange(self.watch, std::chrono::hours(1));
    std::atomic<bool> returned{false};
    std::thread t([&] { idle.idle(self, deadline), returned = true; });
    wake_until_returned(idle, t, returned);
    self.watch = watch;
    return returned.load();
}

// A thread beside a busy one whose sleep, once `race` is set, races a
// work_added(kind) from another thread: sleep_limit() is asked under the
// protocol's lock after the last look, before the thread counts as lazy, so
// the adder counts an eager sleeper, then waits for the lock this thread
// holds.
struct racing_thread final : beside_busy_thread {
    racing_thread(idle_protocol& idle, idle_protocol::work kind) : idle(idle), kind(kind) { idle.attach(*this); }
    idle_protocol& idle;
    const idle_protocol::work kind;
    std::atomic<bool> race{false};
    std::future<void> adder;
    steady::time_point sleep_limit() noexcept override {
        if (race.load() && !adder.valid()) {
            adder = std::async(std::launch::async, [this] { idle.work_added(kind); });
            adder.wait_for(200ms);
        }
        return beside_busy_thread::sleep_limit();
    }
};

}  // namespace

// Regression for the wake-up storm of an idle worker beside one running a
// ping-pong (Commstime on two threads): the busy worker queued a process it
// ran again a moment later, woke the idle one each time (a futex call on its
// side), and the woken one spun over the busy one's queue and slept again,
// thousands of times a second. A thread woken for work it cannot take now
// sleeps lazily: further work_added() calls leave it asleep, and it looks
// by itself while others hold work.
TEST(idle_protocol, a_thread_woken_for_work_it_cannot_take_is_not_woken_for_more_but_looks_by_itself) {
    idle_protocol idle(2, &no_processes);
    beside_busy_thread self;
    idle.attach(self);
    const auto deadline = steady::now() + 20s;
    ASSERT_TRUE(wake_for_nothing(idle, self, deadline)) << "work_added() did not wake an eager sleeper";

    std::atomic<bool> returned{false};
    std::thread second([&] { idle.idle(self, deadline), returned = true; });
    requeue(idle, 100);
    EXPECT_FALSE(returned.load()) << "a lazy sleeper was woken for work it could not take";
    const auto set = steady::now();
    self.work = true;  // work it may take: it finds it at its next look
    second.join();
    EXPECT_LT(steady::now() - set, 5s);
    EXPECT_LT(steady::now(), deadline);

    // Having found work, it is an eager sleeper again.
    self.work = false;
    returned = false;
    std::thread third([&] { idle.idle(self, deadline), returned = true; });
    wake_until_returned(idle, third, returned);
    EXPECT_TRUE(returned.load());
}

// Regression for a par started right after a ring of processes on one
// worker: the other worker, lazy after wake-ups for the ring's requeued
// processes, did not hear of the par's branches, and both ran on one worker
// (two branches of 90 us took 174-177 us; 94-96 before lazy sleepers). A
// new process wakes a lazy sleeper; it does not wait for the sleeper's own
// look (here 30 s away).
TEST(idle_protocol, a_lazy_sleeper_is_woken_for_a_new_process) {
    idle_protocol idle(2, &no_processes);
    beside_busy_thread self;
    idle.attach(self);
    const auto deadline = steady::now() + 60s;
    ASSERT_TRUE(wake_for_nothing(idle, self, deadline));
    self.watch = 30s;

    std::atomic<bool> returned{false};
    std::thread second([&] { idle.idle(self, deadline), returned = true; });
    requeue(idle, 20);
    EXPECT_FALSE(returned.load()) << "a lazy sleeper was woken for requeued work";
    const auto added = steady::now();
    wake_until_returned(idle, second, returned, work::added);
    EXPECT_TRUE(returned.load());
    EXPECT_LT(steady::now() - added, 10s) << "new work waited for the lazy sleeper's own look";
}

// The adder of new work reads the sleepers' counts before it takes the
// protocol's lock; a sleeper it counted as eager may turn lazy before the
// adder gets the lock. It still hears of the work: the adder signals lazy
// sleepers too.
TEST(idle_protocol, new_work_reaches_a_sleeper_that_turned_lazy_after_the_adder_counted_it) {
    idle_protocol idle(2, &no_processes);
    racing_thread self(idle, work::added);
    const auto deadline = steady::now() + 60s;
    ASSERT_TRUE(wake_for_nothing(idle, self, deadline));
    self.watch = 30s;
    self.race = true;
    const auto start = steady::now();
    idle.idle(self, deadline);
    EXPECT_LT(steady::now() - start, 10s) << "new work sent while the sleeper turned lazy was not heard";
    self.adder.get();
}

// A lazy sleeper whose neighbours no longer hold work sleeps as any other:
// work_added() wakes it. Also when a wake-up was on its way to it as it
// turned lazy (sent from its last look, before it counted as lazy): that
// wake-up, lost on the way, must not hold back the next one.
TEST(idle_protocol, a_lazy_sleeper_hears_work_added_once_nobody_holds_work) {
    idle_protocol idle(2, &no_processes);
    racing_thread self(idle, work::requeued);
    const auto deadline = steady::now() + 20s;
    ASSERT_TRUE(wake_for_nothing(idle, self, deadline));

    std::atomic<bool> returned{false};
    self.race = true;
    std::thread second([&] { idle.idle(self, deadline), returned = true; });
    std::this_thread::sleep_for(300ms);  // lazy by now, the adder done
    EXPECT_FALSE(returned.load());
    self.others_hold_work = false;  // its next look makes it an eager sleeper
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(returned.load());
    const auto woken = steady::now();
    wake_until_returned(idle, second, returned);
    EXPECT_TRUE(returned.load());
    EXPECT_LT(steady::now() - woken, 5s) << "the wake-up lost to the lazy turn held back the next one";
    self.adder.get();
}

// The same storm through the idle poller (a node's runtime: the idle worker
// waits in the IO scheduler's poll): each work_added() woke the poll through
// the scheduler's self-pipe, a system call on the busy worker's side
// (Commstime on two threads with an fd armed: 12,000 pipe wake-ups a second,
// 88-99 ns per communication against 76-82 with this). A poller woken for
// work it cannot take polls lazily: work_added() leaves its poll alone, and
// it polls again with a timeout while others hold work.
TEST(idle_protocol, a_poller_woken_for_work_it_cannot_take_is_not_woken_for_more) {
    struct counting_poller final : csp::idle_poller {
        std::mutex m;
        std::condition_variable cv;
        bool woken = false;
        int wakes = 0;
        bool poll_until(steady::time_point until) noexcept override {
            std::unique_lock lk(m);
            cv.wait_until(lk, until, [&] { return woken; });
            woken = false;
            return true;
        }
        void wake() noexcept override {
            std::lock_guard lk(m);
            woken = true;
            ++wakes;
            cv.notify_all();
        }
    } poller;
    csp::detail::runtime_core rt(64 * 1024, 2);
    rt.set_idle_poller(&poller);
    idle_protocol idle(2, &rt);
    beside_busy_thread self;
    idle.attach(self);
    const auto deadline = steady::now() + 20s;
    ASSERT_TRUE(wake_for_nothing(idle, self, deadline));

    std::atomic<bool> returned{false};
    std::thread second([&] { idle.idle(self, deadline), returned = true; });
    std::this_thread::sleep_for(20ms);
    const int wakes_before = [&] {
        std::lock_guard lk(poller.m);
        return poller.wakes;
    }();
    requeue(idle, 100);
    EXPECT_FALSE(returned.load()) << "a lazy poller was woken for work it could not take";
    {
        std::lock_guard lk(poller.m);
        EXPECT_EQ(poller.wakes, wakes_before);
    }
    self.work = true;
    second.join();
    EXPECT_LT(steady::now(), deadline);

    // New work wakes a lazy poller's poll (the par after a ring, on a node).
    self.work = false;
    ASSERT_TRUE(wake_for_nothing(idle, self, deadline));
    self.watch = 30s;
    returned = false;
    std::thread third([&] { idle.idle(self, deadline), returned = true; });
    std::this_thread::sleep_for(20ms);
    EXPECT_FALSE(returned.load());
    const auto added = steady::now();
    wake_until_returned(idle, third, returned, work::added);
    EXPECT_TRUE(returned.load());
    EXPECT_LT(steady::now() - added, 10s) << "new work waited for the lazy poller's own look";
    rt.set_idle_poller(nullptr);
}
