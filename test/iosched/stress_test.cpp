// Many requesters at once, from fibers on every worker and from plain
// threads, on many fds; every byte is counted and checked in order.
#include <atomic>
#include <thread>
#include <vector>

#include "test/iosched/fd_pair.hpp"
#include "test/iosched/io_fixture.hpp"

using csp_test::fd_pair;
using csp_test::get_byte;
using csp_test::put_byte;

namespace {

class io_stress : public csp_test::io_suite {};

// One echo process per pair: waits for a byte on a(), sends it back on a().
void echo(int fd, int count) {
    csp::io::watch in(fd, csp::io::interest::read);
    for (int done = 0; done < count;) {
        in.wait();
        for (int b; (b = get_byte(fd)) >= 0; ++done) put_byte(fd, static_cast<char>(b));
    }
}

// Reads `count` bytes 0, 1, 2, ... from fd, waiting for readability at most
// `wait` at a time and registering again after each timeout; counts each.
void read_in_short_waits(int fd, int count, std::chrono::microseconds wait, std::atomic<long>& received) {
    for (int n = 0; n < count;) {
        if (csp::select(csp::io::readable(fd), csp::timeout(wait)) != 0) continue;
        for (int b; (b = get_byte(fd)) >= 0; ++n) {
            ASSERT_EQ(b, n % 256);
            received.fetch_add(1);
        }
    }
}

TEST_P(io_stress, fibers_and_threads_ping_pong_through_one_scheduler) {
    constexpr int thread_clients = 4, fiber_clients = 16, rounds = 400;
    std::vector<fd_pair> pairs(thread_clients + fiber_clients);
    std::atomic<long> echoed{0};
    csp_test::run_watched([&] {
        auto sched = start();
        csp::channel<int> finished{"finished", csp::buffer::unbounded()};
        std::vector<std::thread> threads;
        // Plain threads wait through the handle: one-shot registrations,
        // made and dropped thousands of times, from four threads at once.
        for (int t = 0; t < thread_clients; ++t) {
            threads.emplace_back([&, t, sched, done = finished.writer(), party = csp::external_party()] {
                const int fd = pairs[t].b();
                for (int r = 0; r < rounds; ++r) {
                    put_byte(fd, static_cast<char>(r));
                    int b;
                    while ((b = get_byte(fd)) == -1) csp::io::wait_readable(sched, fd);
                    ASSERT_EQ(b, r % 256);
                    echoed.fetch_add(1);
                }
                done.write(t);
            });
        }
        csp::par(
            [&] {
                csp::par_for(pairs.size(), [&](std::size_t i) { echo(pairs[i].a(), rounds); });
            },
            [&] {
                csp::par_for(fiber_clients, [&](std::size_t k) {
                    const int fd = pairs[thread_clients + k].b();
                    csp::io::watch in(fd, csp::io::interest::read);
                    for (int r = 0; r < rounds; ++r) {
                        put_byte(fd, static_cast<char>(r + static_cast<int>(k)));
                        int b;
                        while ((b = get_byte(fd)) == -1) in.wait();
                        ASSERT_EQ(b, (r + static_cast<int>(k)) % 256);
                        echoed.fetch_add(1);
                    }
                });
            });
        // Joining a thread blocks the worker: wait for the threads' word first.
        for (int t = 0; t < thread_clients; ++t) finished.reader().read();
        for (auto& t : threads) t.join();
    }, opts());
    EXPECT_EQ(echoed.load(), long{thread_clients + fiber_clients} * rounds);
}

TEST_P(io_stress, selects_that_come_and_go_never_lose_a_byte) {
    // Each consumer alternates between its socket and a timeout so short that
    // registrations are withdrawn and remade constantly; every byte must
    // still arrive exactly once.
    constexpr int consumers = 8, bytes_each = 300;
    std::vector<fd_pair> pairs(consumers);
    std::atomic<long> received{0};
    csp_test::run_watched([&] {
        start();
        csp::par_for(2 * consumers, [&](std::size_t k) {
            const std::size_t i = k / 2;
            if (k % 2 == 1) {
                for (int n = 0; n < bytes_each; ++n) {
                    // The socket holds a few hundred one-byte messages at most.
                    const char c = static_cast<char>(n);
                    while (::write(pairs[i].b(), &c, 1) != 1) {
                        ASSERT_EQ(errno, EAGAIN);
                        csp::io::wait_writable(pairs[i].b());
                    }
                    if (n % 7 == 0) csp::sleep_for(std::chrono::microseconds(50));
                }
                return;
            }
            read_in_short_waits(pairs[i].a(), bytes_each, std::chrono::microseconds(30), received);
        });
    }, opts());
    EXPECT_EQ(received.load(), long{consumers} * bytes_each);
}

// Regression (a_storm_of_requests_does_not_keep_the_scheduler_from_polling):
// waits that time out within microseconds and register again kept the
// scheduler process busy with requests, so the runtime was never idle while
// it was parked, no worker polled for it, and no fd was ever seen ready (a
// livelock; with epoll under AddressSanitizer every time). Every byte is already waiting
// here: one poll is all each consumer needs.
TEST_P(io_stress, a_storm_of_requests_does_not_keep_the_scheduler_from_polling) {
    constexpr int consumers = 32, bytes_each = 20;
    std::vector<fd_pair> pairs(consumers);
    for (auto& p : pairs)
        for (int n = 0; n < bytes_each; ++n) put_byte(p.b(), static_cast<char>(n));
    std::atomic<long> received{0};
    const auto wait = std::chrono::microseconds(opts().threads == 1 ? 5 : 100);
    csp_test::run_watched([&] {
        start();
        csp::par_for(consumers, [&](std::size_t i) { read_in_short_waits(pairs[i].a(), bytes_each, wait, received); });
    }, opts());
    EXPECT_EQ(received.load(), long{consumers} * bytes_each);
}

// Regression (a_wait_on_a_ready_fd_never_depends_on_the_scheduler_keeping_up):
// the storm above still hung now and then under AddressSanitizer on a loaded
// machine: once the scheduler's queue was longer than a wait's timeout, every
// registration was applied after its own wait had timed out, so no wait ever
// saw its (long ready) fd. A fresh wait now asks the kernel first: a ready fd
// is answered without the scheduler, which is flooded here on purpose by
// processes registering and cancelling fds that never become ready. The flood
// also found the scheduler never giving up its worker while requests kept
// coming, so the timers of processes on that worker never fired. With four
// workers pinned to one core it hung about one run in 100 until polls that
// cannot block stopped taking the wake-ups meant for the idle worker's poll
// (handover_test.cpp, backend_test.cpp; soak: iosched_soak_one_core).
TEST_P(io_stress, a_wait_on_a_ready_fd_never_depends_on_the_scheduler_keeping_up) {
    constexpr int consumers = 16, churners = 16, bytes_each = 50;
    constexpr auto wait = std::chrono::microseconds(1);
    std::vector<fd_pair> pairs(consumers), idle(churners);
    std::atomic<long> received{0};
    std::atomic<bool> done{false};
    csp_test::run_watched([&] {
        auto sched = start();
        csp::par(
            [&] {
                // A timeout may have passed before the select suspends, and then
                // it returns at once: the yields let the others run on one worker.
                csp::par_for(churners, [&](std::size_t i) {
                    while (!done.load()) {
                        EXPECT_EQ(csp::select(csp::io::readable(idle[i].a()), csp::timeout(wait)), 1u);
                        csp::yield();
                    }
                });
            },
            [&] {
                csp::par_for(2 * consumers, [&](std::size_t k) {
                    const std::size_t i = k / 2;
                    if (k % 2 == 1) {
                        for (int n = 0; n < bytes_each; ++n) {
                            put_byte(pairs[i].b(), static_cast<char>(n));
                            csp::sleep_for(std::chrono::microseconds(20));
                        }
                        return;
                    }
                    for (int n = 0; n < bytes_each;) {
                        if (csp::select(csp::io::readable(pairs[i].a()), csp::timeout(wait)) != 0) {
                            csp::yield();
                            continue;
                        }
                        for (int b; (b = get_byte(pairs[i].a())) >= 0; ++n) {
                            ASSERT_EQ(b, n % 256);
                            received.fetch_add(1);
                        }
                    }
                });
                done = true;
            });
        EXPECT_TRUE(csp_test::set_empties(sched));
    }, opts());
    EXPECT_EQ(received.load(), long{consumers} * bytes_each);
}

CSP_ON_EVERY_IO_CONFIG(io_stress);

}  // namespace
