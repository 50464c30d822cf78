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

#include "csp/detail/idle_protocol.hpp"

using csp::detail::idle_protocol;
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
                producer = std::async(std::launch::async, [p = idle] { p->work_added(); });
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
            else idle.work_added();
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
