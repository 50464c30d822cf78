// A process that never waits still gives up its worker now and then
// (csp/detail/turn.hpp): a polling loop or a reader whose buffer never runs
// dry must not keep a timer, a process woken from another thread, or a
// higher priority from ever running. Each case bounds its busy loop, so that
// without preemption it fails (the loop runs out) instead of hanging.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "helpers.hpp"

namespace {

using namespace std::chrono_literals;

// Far more operations than a turn holds, and about a second of work, so a
// loop that reaches it never let the other process run.
constexpr std::uint64_t busy_limit = 20'000'000;

class turn : public ::testing::TestWithParam<std::size_t> {};

// Runs busy(woke) beside a process that sleeps 1 ms and then sets woke, on
// `threads` workers; returns how many rounds busy made (it stops at woke or
// busy_limit).
template <class Busy>
std::uint64_t rounds_beside_a_sleeper(std::size_t threads, Busy busy) {
    std::atomic<bool> woke{false};
    std::uint64_t rounds = 0;
    csp_test::run_watched(
        [&] {
            csp::par([&] { rounds = busy(woke); },
                     [&] {
                         csp::sleep_for(1ms);
                         woke = true;
                     });
        },
        {.threads = threads});
    EXPECT_TRUE(woke.load());
    return rounds;
}

TEST_P(turn, a_polling_select_loop_does_not_keep_a_timer_from_firing) {
    csp::channel<int> never;  // no writer ever writes: every select takes the skip
    const auto polls = rounds_beside_a_sleeper(GetParam(), [&](const std::atomic<bool>& woke) {
        std::uint64_t n = 0;
        int v = 0;
        for (; !woke.load(std::memory_order_relaxed) && n < busy_limit; ++n)
            EXPECT_EQ(csp::select(csp::input(never.reader(), v), csp::skip()), 1u);
        return n;
    });
    EXPECT_LT(polls, busy_limit) << "the polling process never let the sleeper's timer fire";
}

// One process writes into a buffer and reads back what it wrote: every
// operation completes at once, so nothing ever makes it wait.
TEST_P(turn, a_reader_whose_buffer_never_empties_lets_a_sleeper_run) {
    csp::channel<std::uint64_t> loop(csp::buffer::fifo(4));
    const auto rounds = rounds_beside_a_sleeper(GetParam(), [&](const std::atomic<bool>& woke) {
        const auto w = loop.writer();
        const auto r = loop.reader();
        std::uint64_t n = 0;
        w.write(0);
        for (; !woke.load(std::memory_order_relaxed) && n < busy_limit; ++n) {
            w.write(n + 1);
            EXPECT_EQ(r.read(), n);  // every value, in order
        }
        EXPECT_EQ(r.read(), n);
        return n;
    });
    EXPECT_LT(rounds, busy_limit) << "the reader never let the sleeper's timer fire";
}

// A plain thread keeps a buffer full; the process that drains it shares its
// worker with a sleeper. Every value is counted.
TEST_P(turn, a_reader_fed_from_a_plain_thread_lets_a_sleeper_run) {
    constexpr std::uint64_t values = 200'000;
    csp::channel<std::uint64_t> c(csp::buffer::fifo(4096));
    std::atomic<bool> woke{false};
    auto w = c.writer();
    std::thread feeder([w = std::move(w)] {
        for (std::uint64_t i = 0; i < values; ++i) w.write(i);
        w.retire();
    });
    std::uint64_t next = 0;
    csp_test::run_watched(
        [&] {
            csp::par(
                [&] {
                    const auto r = c.reader();
                    csp_test::read_until<csp::retired_error>(r, [&](std::uint64_t v) {
                        ASSERT_EQ(v, next);
                        ++next;
                    });
                },
                [&] {
                    csp::sleep_for(200us);
                    woke = true;
                });
        },
        {.threads = GetParam()});
    feeder.join();
    EXPECT_EQ(next, values);
    EXPECT_TRUE(woke.load());
}

// A process made ready from outside the runtime, at a higher priority than
// the busy one, runs within a turn, not after the busy process ends.
TEST_P(turn, a_high_priority_process_woken_from_a_plain_thread_preempts_a_busy_loop) {
    csp::channel<int> go;
    std::atomic<bool> ran{false};
    std::atomic<bool> busy{false};
    std::uint64_t polls = 0;
    auto w = go.writer();
    std::thread waker([w = std::move(w), &busy] {
        while (!busy.load()) std::this_thread::sleep_for(100us);
        w.write(1);
    });
    csp_test::run_watched(
        [&] {
            csp::par(
                [&] {
                    csp::this_process::set_priority(csp::priority_high);
                    EXPECT_EQ(go.reader().read(), 1);
                    ran = true;
                },
                [&] {
                    csp::this_process::set_priority(csp::priority_low);
                    csp::channel<int> never;
                    int v = 0;
                    busy = true;
                    while (!ran.load(std::memory_order_relaxed) && polls < busy_limit) {
                        (void)csp::select(csp::input(never.reader(), v), csp::skip());
                        ++polls;
                    }
                });
        },
        {.threads = GetParam()});
    waker.join();
    EXPECT_TRUE(ran.load());
    EXPECT_LT(polls, busy_limit) << "the woken high-priority process waited for the busy loop to end";
}

// csp::yield() says whether anything else ran before the caller did again:
// a polling loop gives up its core to other programs only when its own
// runtime had nothing else to do (the UCX progress loop does).
TEST(yield, says_whether_another_process_ran_before_the_caller_again) {
    int alone_false = 0, beside_true = 0;
    csp_test::run_watched([&] {
        // Alone: false, but for the runtime's own round now and then.
        for (int i = 0; i < 1000; ++i) alone_false += csp::yield() ? 0 : 1;
        // Beside a process that keeps yielding: it runs between every time.
        csp::par([&] { for (int i = 0; i < 1000; ++i) beside_true += csp::yield() ? 1 : 0; },
                 [] { for (int i = 0; i < 3000; ++i) (void)csp::yield(); });
    });
    EXPECT_GE(alone_false, 900);
    EXPECT_EQ(beside_true, 1000);
}

// On several workers a process may have a worker to itself (then yield()
// is false: nothing else ran there); with more yielding processes than
// workers, some worker holds two at once, and their yields say so.
TEST(yield, is_true_on_two_workers_when_more_processes_than_workers_yield) {
    constexpr int processes = 4, rounds = 2000;
    std::atomic<int> yields{0}, saw_others{0};
    csp_test::run_watched(
        [&] {
            csp::par_for(processes, [&](std::size_t) {
                for (int i = 0; i < rounds; ++i) {
                    yields.fetch_add(1, std::memory_order_relaxed);
                    if (csp::yield()) saw_others.fetch_add(1, std::memory_order_relaxed);
                }
            });
        },
        {.threads = 2});
    EXPECT_EQ(yields.load(), processes * rounds);
    EXPECT_GT(saw_others.load(), 0);
}

namespace {

// Rounds through the scheduler that `calls` calls of `op` took, counted by
// the worker's picks (detail/turn.hpp: one per round); a call that ended on
// another worker counts one and a move.
struct rounds_taken {
    std::uint64_t picks = 0;
    int moves = 0;
};
template <class Op>
rounds_taken count_rounds(int calls, Op op) {
    rounds_taken r;
    for (int i = 0; i < calls; ++i) {
        csp::detail::turn_state* const before = csp::detail::this_thread_turn_state();
        const std::uint64_t picked = before->picks;
        op();
        csp::detail::turn_state* const after = csp::detail::this_thread_turn_state();
        if (after == before) r.picks += after->picks - picked;
        else ++r.picks, ++r.moves;
    }
    return r;
}

}  // namespace

// Regression (a_lone_yield_on_two_workers_took_a_round_through_the_scheduler):
// on a runtime of several threads every yield went through Boost's round:
// the process was queued where other workers may steal it, the idle worker
// was told of new work and spun on that queue, and the process was picked
// again, 340-390 ns a yield against 4.5 on one thread (a task graph's lone
// worker paid 630 ns per instance for it, 206 after). A yield with nothing
// else ready on its worker now goes on at once there too; the round is
// still taken every 64th time (timers, the busy poll).
TEST(yield, a_lone_yield_on_two_workers_took_a_round_through_the_scheduler) {
    constexpr int rounds = 10000;
    rounds_taken taken;
    int alone = 0;
    csp_test::run_watched([&] { taken = count_rounds(rounds, [&] { alone += csp::yield() ? 0 : 1; }); },
                          {.threads = 2});
    EXPECT_LE(taken.picks, static_cast<std::uint64_t>(rounds / 32));  // 156: every 64th
    EXPECT_LE(taken.moves, rounds / 100);
    EXPECT_GE(alone, rounds - rounds / 50);
}

// A yield with nothing else ready on its worker returns at once (the
// policies' lone_yield shortcut), but a sleeping process's timer and a
// process woken from a plain thread still get their turn, on one worker
// thread or two: a loop that yields until they act
// ends, and the yields made while it was alone said so. The loops are
// bounded by time, not by a count: a lone yield takes a few nanoseconds, so
// busy_limit of them is over before a loaded machine's plain thread has
// written its messages, and the runtime then rightly calls the reader's
// wait a deadlock.
constexpr auto give_up_after = 10s;

class lone_yield : public ::testing::TestWithParam<std::size_t> {};

// Regression (a_yield_to_io_between_looks_took_a_round_through_the_scheduler):
// csp::yield_to_io() took Boost's round at every call, though the look at
// the event sources it asks for is made at most once per yield_to_io_gap
// and the round otherwise only picked the caller again (a task graph's
// worker calls it after every body over TCP). Between looks, with nothing
// else ready, it now goes on at once as yield() does.
TEST_P(lone_yield, a_yield_to_io_between_looks_took_a_round_through_the_scheduler) {
    constexpr int rounds = 10000;
    rounds_taken taken;
    csp_test::run_watched([&] { taken = count_rounds(rounds, [] { csp::yield_to_io(); }); },
                          {.threads = GetParam()});
    EXPECT_LE(taken.picks, static_cast<std::uint64_t>(rounds / 16));
}

TEST_P(lone_yield, still_lets_a_timer_fire) {
    bool woke = false;
    std::uint64_t alone = 0, yields = 0;
    csp_test::run_watched([&] {
        csp::par(
            [&] {
                csp::sleep_for(std::chrono::milliseconds(2));
                woke = true;
            },
            [&] {
                const auto give_up = std::chrono::steady_clock::now() + give_up_after;
                while (!woke && std::chrono::steady_clock::now() < give_up) {
                    ++yields;
                    alone += csp::yield() ? 0 : 1;
                }
            });
    }, {.threads = GetParam()});
    EXPECT_TRUE(woke);
    EXPECT_GT(yields, 100);
    EXPECT_GE(alone + 2, yields);  // others ran at most twice: the sleeper's start and its wake
}

TEST_P(lone_yield, still_lets_a_process_woken_from_another_thread_run) {
    constexpr int messages = 200;
    int got = 0;
    csp_test::run_watched([&] {
        csp::channel<int> c;
        bool done = false;
        std::jthread outside([w = c.writer()] {
            for (int i = 0; i < messages; ++i) w.write(i);
        });
        csp::par(
            [&, r = c.reader()] {
                for (int i = 0; i < messages; ++i) got += r.read() == i ? 1 : 0;
                done = true;
            },
            [&] {
                const auto give_up = std::chrono::steady_clock::now() + give_up_after;
                while (!done && std::chrono::steady_clock::now() < give_up) (void)csp::yield();
            });
        outside.join();
    }, {.threads = GetParam()});
    EXPECT_EQ(got, messages);
}

INSTANTIATE_TEST_SUITE_P(workers, lone_yield, ::testing::Values(std::size_t{1}, std::size_t{2}),
                         [](const auto& info) { return std::to_string(info.param) + "_threads"; });

INSTANTIATE_TEST_SUITE_P(workers, turn, ::testing::Values(std::size_t{1}, std::size_t{2}, std::size_t{4}),
                         [](const auto& info) { return std::to_string(info.param) + "_threads"; });

}  // namespace
