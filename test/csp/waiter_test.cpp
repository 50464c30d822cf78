// Plain threads woken by processes (csp/waiter.hpp, invariants 2, 3 and 5).
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "helpers.hpp"

namespace {

using namespace std::chrono_literals;

// A plain thread woken by a process is queued on its own Boost scheduler,
// which is then notified; here every reader thread ends the moment its one
// read returns, while its writer may still be inside the wake.
TEST(waiter_regression, plain_thread_woken_then_gone) {
    constexpr int rounds = 300, readers = 4;
    std::atomic<long> sum{0};
    for (std::size_t threads : {std::size_t{1}, std::size_t{2}}) {
        csp_test::run_watched(
            [&] {
                for (int r = 0; r < rounds; ++r) {
                    std::vector<csp::channel<int>> cs(readers);
                    std::vector<std::thread> ts;
                    for (auto& c : cs)
                        ts.emplace_back([&sum, rd = c.reader(), p = csp::external_party()] { sum += rd.read(); });
                    csp::par_for(readers, [&](std::size_t i) { cs[i].writer().write(static_cast<int>(i) + 1); });
                    for (auto& t : ts) t.join();
                }
            },
            {.threads = threads});
    }
    EXPECT_EQ(sum.load(), 2L * rounds * (readers * (readers + 1) / 2));
}

// The same for a writer thread released by a reading process, and for a
// thread in a select.
TEST(waiter_regression, plain_thread_writer_and_selector_woken_then_gone) {
    constexpr int rounds = 300;
    std::atomic<int> chosen{0};
    long read = 0;
    csp_test::run_watched(
        [&] {
            for (int r = 0; r < rounds; ++r) {
                csp::channel<int> a, b, c;
                std::thread writer([w = a.writer(), p = csp::external_party()] { w.write(7); });
                std::thread selector([&chosen, rb = b.reader(), rc = c.reader(), p = csp::external_party()] {
                    int v = 0;
                    chosen += static_cast<int>(csp::select(csp::input(rb, v), csp::input(rc, v))) + v;
                });
                read += a.reader().read();
                (r % 2 ? b : c).writer().write(10);
                writer.join();
                selector.join();
            }
        },
        {.threads = 2});
    EXPECT_EQ(read, 7L * rounds);
    // select returns 0 for b (odd rounds) and 1 for c (even rounds).
    EXPECT_EQ(chosen.load(), 10 * rounds + rounds / 2);
}

// A plain thread's timed select whose deadline passes while a process
// commits it: the thread must take the value the process handed over, and a
// wake that arrives after the deadline must not leak into its next wait.
TEST(waiter, plain_thread_timed_select_races_its_deadline) {
    constexpr int rounds = 2000;
    std::atomic<int> got{0}, timeouts{0};
    csp::channel<int> c;
    csp_test::run_watched(
        [&] {
            std::thread t([&, rd = c.reader(), p = csp::external_party()] {
                for (int r = 0; r < rounds; ++r) {
                    int v = 0;
                    if (csp::select(csp::input(rd, v), csp::timeout(std::chrono::microseconds(r % 7))) == 0) {
                        ASSERT_EQ(v, got.load() + 1);
                        ++got;
                    } else {
                        ++timeouts;
                    }
                }
            });
            auto w = c.writer();
            int next = 1;
            for (;;) {
                int v = next;
                if (csp::select(csp::output(w, v), csp::timeout(50us)) == 0) ++next;
                if (got.load() + timeouts.load() == rounds) break;
            }
            t.join();
        },
        {.threads = 2});
    EXPECT_EQ(got.load() + timeouts.load(), rounds);
    EXPECT_GT(got.load(), 0);
}

}  // namespace

namespace {

// Plain threads and processes of a four-worker runtime ping-pong: every
// write of a thread commits a parked process and hands it to the runtime's
// shared queue, often while that process is still suspending on its worker
// (handoff.hpp step 3); every reply wakes a thread through Boost's waker. Every
// value is counted, under the watchdog (a stranded process would hang).
TEST(waiter, plain_threads_and_processes_ping_pong_through_the_shared_queue) {
    constexpr int pairs = 4, rounds = 5000;
    std::atomic<long> sum{0};
    csp_test::run_watched(
        [&] {
            std::vector<csp::channel<int>> to(pairs), from(pairs);
            std::vector<std::thread> ts;
            for (int p = 0; p < pairs; ++p)
                ts.emplace_back([&, p, out = to[p].writer(), in = from[p].reader(), party = csp::external_party()] {
                    for (int r = 0; r < rounds; ++r) {
                        out.write(r);
                        sum += in.read();
                    }
                });
            csp::par_for(pairs, [&](std::size_t p) {
                auto in = to[p].reader();
                auto out = from[p].writer();
                for (int r = 0; r < rounds; ++r) out.write(in.read() + 1);
            });
            for (auto& t : ts) t.join();
        },
        {.threads = 4});
    // Each thread gets back r + 1 for r = 0 .. rounds - 1.
    EXPECT_EQ(sum.load(), long{pairs} * rounds * (rounds + 1) / 2);
}

}  // namespace

namespace {

// A one-thread runtime's process makes no Boost waker for an untimed wait;
// a plain thread that wakes it makes one then (waiter.hpp, invariant 5).
// The process alternates a timed select, whose deadline races a thread's
// commit (so that thread's wake often comes after the timer and is stale),
// with an untimed read from another thread: a stale wake that matched the
// fiber's epoch would end the read before any value came (a wrong value, a
// lost one, or a hang under the watchdog). Every value is counted.
TEST(waiter, one_thread_processes_woken_by_plain_threads_after_timed_waits_take_no_stale_wake) {
    static constexpr int rounds = 4000;
    std::atomic<int> offered{0};
    int taken = 0;
    long read_sum = 0;
    csp::channel<int> racing, steady;
    csp_test::run_watched(
        [&] {
            std::thread racer([&, w = racing.writer(), p = csp::external_party()] {
                for (int r = 0; r < rounds; ++r) {
                    int v = r;
                    if (csp::select(csp::output(w, v), csp::timeout(std::chrono::microseconds(r % 5))) == 0) ++offered;
                }
            });
            std::thread feeder([w = steady.writer(), p = csp::external_party()] {
                for (int r = 0; r < rounds; ++r) w.write(r);
            });
            auto rd = racing.reader();
            auto in = steady.reader();
            for (int r = 0; r < rounds; ++r) {
                int v = -1;
                if (csp::select(csp::input(rd, v), csp::timeout(std::chrono::microseconds(r % 3))) == 0) {
                    ASSERT_GE(v, 0);
                    ++taken;
                }
                const int got = in.read();
                ASSERT_EQ(got, r);
                read_sum += got;
            }
            racer.join();
            feeder.join();
        },
        {.threads = 1});
    EXPECT_EQ(taken, offered.load());
    EXPECT_EQ(read_sum, long{rounds} * (rounds - 1) / 2);
}

}  // namespace
