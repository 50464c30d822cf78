// Waiting for readiness: who is woken, how many at once, in what order, and
// how fast a request reaches a poll already blocked.
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "csp/detail/tuning.hpp"
#include "test/iosched/fd_pair.hpp"
#include "test/iosched/io_fixture.hpp"

using namespace std::chrono_literals;
using csp_test::fd_pair;
using csp_test::get_byte;
using csp_test::put_byte;

namespace {

class io_wait : public csp_test::io_suite {
protected:
    // One process waits for a byte that another writes 5 ms later; the
    // scheduler started with `o`. The byte read.
    int byte_after_a_wait(const csp::io::scheduler_options& o) const {
        fd_pair p;
        int got = 0;
        csp_test::run_watched([&] {
            csp::io::start_scheduler(o);
            csp::par(
                [&] {
                    csp::io::wait_readable(p.a());
                    got = get_byte(p.a());
                },
                [&] {
                    csp::sleep_for(5ms);
                    put_byte(p.b(), 'x');
                });
        }, opts());
        return got;
    }
};

TEST_P(io_wait, readiness_wakes_the_waiting_process) {
    EXPECT_EQ(byte_after_a_wait({.backend = GetParam().backend}), 'x');
}

// Regression: a spin of clock::duration::max() (spin for as long as there is
// nothing else to do) overflowed now() + spin, signed overflow that the
// sanitizer build stops at. The spin's end saturates now, and the spin
// still ends at the next timer's deadline, so the writer runs.
TEST_P(io_wait, a_spin_of_the_largest_duration_spins_until_something_is_due) {
    EXPECT_EQ(byte_after_a_wait({.backend = GetParam().backend, .spin = csp::clock::duration::max()}), 'x');
}

// A process that computes in steps and calls csp::yield_to_io() between
// them has the poll made at its next step, so the waiter on a ready fd runs
// within a few steps; a plain yield leaves it to the busy poll, once per
// millisecond of computation (about 50 of these 20 us steps). Regression
// (dataflow workers): arrivals waited for the busy poll between task bodies.
TEST_P(io_wait, yield_to_io_lets_a_computing_process_hand_a_ready_fd_to_its_waiter_within_a_few_steps) {
    fd_pair p;
    std::atomic<int> step{0}, woke_at{-1};
    int got = 0;
    csp_test::run_watched([&] {
        auto sched = start();
        csp::par(
            [&] {
                csp::io::wait_readable(p.a());
                woke_at = step.load();
                got = get_byte(p.a());
            },
            [&] {
                csp_test::wait_until_armed(sched);
                put_byte(p.b(), 'y');
                for (int s = 0; s < 5000 && woke_at.load() < 0; ++s) {
                    step = s;
                    const auto until = std::chrono::steady_clock::now() + 20us;
                    while (std::chrono::steady_clock::now() < until) {
                    }
                    csp::yield_to_io();
                }
            });
    }, opts());
    EXPECT_EQ(got, 'y');
    EXPECT_GE(woke_at.load(), 0);
    // On several threads the waiter may sit on a worker the OS has not run
    // yet: only one thread makes the count a property of the runtime alone.
    if (GetParam().threads == 1) {
        EXPECT_LE(woke_at.load(), 4);
    }
}

// yield_to_io() polls at most once per yield_to_io_gap: a process that asks
// after every 2 us step (a task graph of short bodies) makes about one poll
// per 25 steps, not one per step, each a system call over every descriptor.
// Regression (dataflow workers): a poll after every body of a 4-node Jacobi
// graph cost a tenth of its step.
TEST_P(io_wait, yield_to_io_polls_at_most_once_per_gap_however_short_the_steps) {
    if (GetParam().threads != 1) GTEST_SKIP() << "counts one worker's polls";
    fd_pair p;
    constexpr int steps = 10000;
    std::uint64_t polls = 0;
    std::chrono::steady_clock::duration took{};
    csp_test::run_watched([&] {
        auto sched = start();
        csp::par(
            [&] {
                csp::io::wait_readable(p.a());  // keeps the scheduler parked, so polls happen
                (void)get_byte(p.a());
            },
            [&] {
                csp_test::wait_until_armed(sched);
                const auto before = sched.stats().polls;
                const auto t0 = std::chrono::steady_clock::now();
                for (int s = 0; s < steps; ++s) {
                    const auto until = std::chrono::steady_clock::now() + 2us;
                    while (std::chrono::steady_clock::now() < until) {
                    }
                    csp::yield_to_io();
                }
                took = std::chrono::steady_clock::now() - t0;
                polls = sched.stats().polls - before;
                put_byte(p.b(), 'z');
            });
    }, opts());
    const auto gap = csp::detail::tuning::yield_to_io_gap;
    // One poll per gap of the time the steps took, one per millisecond from
    // the busy-poll clock, and a few for the start.
    const auto bound = static_cast<std::uint64_t>(took / gap + took / 1ms + 10);
    EXPECT_LE(polls, bound) << "in " << std::chrono::duration<double, std::milli>(took).count() << " ms";
    EXPECT_LT(polls, static_cast<std::uint64_t>(steps / 4));
    EXPECT_GE(polls, 1u);
}

TEST_P(io_wait, wakes_exactly_the_process_waiting_on_the_ready_fd) {
    constexpr int n = 8;
    std::vector<fd_pair> pairs(n);
    std::vector<int> woken_order;
    csp::channel<int> woken{"woken", csp::buffer::unbounded()};
    csp_test::run_watched([&] {
        auto sched = start();
        csp::par(
            [&] {
                csp::par_for(n, [&, out = woken.writer()](std::size_t i) {
                    csp::io::wait_readable(pairs[i].a());
                    EXPECT_EQ(get_byte(pairs[i].a()), static_cast<int>(i));
                    out.write(static_cast<int>(i));
                });
            },
            [&, in = woken.reader()] {
                // Make the fds ready one at a time, in a scrambled order, and
                // check that each time exactly the matching process wakes.
                for (int k = 0; k < n; ++k) {
                    const int i = (k * 5 + 3) % n;
                    csp_test::wait_until_armed(sched, static_cast<std::size_t>(n - k));
                    put_byte(pairs[i].b(), static_cast<char>(i));
                    woken_order.push_back(in.read());
                    csp::sleep_for(2ms);  // nobody else may wake meanwhile
                    EXPECT_EQ(woken.buffered(), 0u);
                }
            });
    }, opts());
    ASSERT_EQ(woken_order.size(), static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k) EXPECT_EQ(woken_order[k], (k * 5 + 3) % n);
}

TEST_P(io_wait, many_processes_on_many_fds_all_served) {
    constexpr int n = 200, rounds = 20;
    std::vector<fd_pair> pairs(n);
    std::atomic<long> received{0};
    csp_test::run_watched([&] {
        start();
        csp::par_for(2 * n, [&](std::size_t k) {
            const std::size_t i = k / 2;
            if (k % 2 == 0) {
                csp::io::watch in(pairs[i].a(), csp::io::interest::read);
                for (int r = 0; r < rounds;) {
                    in.wait();
                    for (int b; (b = get_byte(pairs[i].a())) >= 0; ++r) {
                        EXPECT_EQ(b, r % 256);
                        received.fetch_add(1);
                    }
                }
            } else {
                for (int r = 0; r < rounds; ++r) {
                    put_byte(pairs[i].b(), static_cast<char>(r));
                    if (r % 3 == 0) csp::yield();
                }
            }
        });
    }, opts());
    EXPECT_EQ(received.load(), long{n} * rounds);
}

TEST_P(io_wait, repeated_readiness_on_one_fd_arrives_in_order) {
    fd_pair p;
    constexpr int n = 500;
    std::vector<int> seen;
    csp_test::run_watched([&] {
        start();
        csp::channel<int> sent{"sent"};
        csp::par(
            [&, ack = sent.reader()] {
                csp::io::watch in(p.a(), csp::io::interest::read);
                for (int i = 0; i < n; ++i) {
                    in.wait();
                    seen.push_back(get_byte(p.a()));
                    ack.read();
                }
            },
            [&, ack = sent.writer()] {
                for (int i = 0; i < n; ++i) {
                    put_byte(p.b(), static_cast<char>(i % 256));
                    ack.write(i);  // one byte in flight at a time: one readiness each
                }
            });
    }, opts());
    ASSERT_EQ(seen.size(), static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) EXPECT_EQ(seen[i], i % 256) << "at " << i;
}

TEST_P(io_wait, writable_reports_room_in_the_socket_buffer) {
    fd_pair p;
    long written = 0, drained = 0;
    csp_test::run_watched([&] {
        start();
        // Fill the socket until write says EAGAIN; wait_writable must then
        // block until the reader makes room.
        const std::vector<char> buf(4096);
        for (;;) {
            const ssize_t n = ::write(p.b(), buf.data(), buf.size());
            if (n < 0) break;
            written += n;
        }
        csp::par(
            [&] {
                const auto ev = csp::io::wait_writable(p.b());
                EXPECT_TRUE(ev.writable());
                EXPECT_GT(drained, 0);
            },
            [&] {
                csp::sleep_for(10ms);
                std::vector<char> sink(65536);  // not on the process's small stack
                for (ssize_t n; (n = ::read(p.a(), sink.data(), sink.size())) > 0;) drained += n;
            });
    }, opts());
    EXPECT_EQ(drained, written);
}

// Every process is blocked and no timer is pending: the worker sits in a poll
// with no timeout. Only the self-pipe can bring news from a plain thread.
TEST_P(io_wait, a_wake_from_a_plain_thread_interrupts_a_blocked_poll) {
    fd_pair p;
    csp_test::run_watched([&] {
        auto sched = start();
        csp::channel<int> go{"go"};
        std::thread t([out = go.writer(), party = csp::external_party(), &p] {
            std::this_thread::sleep_for(30ms);
            out.write(1);
            std::this_thread::sleep_for(30ms);
            put_byte(p.b(), 'y');
        });
        go.reader().read();
        csp::io::wait_readable(p.a());
        EXPECT_EQ(get_byte(p.a()), 'y');
        t.join();
        // With one worker, the only way the news got in (with two, the other
        // worker may have been the one woken).
        if (GetParam().threads == 1) {
            EXPECT_GE(sched.stats().pipe_wakes, 1u);
        }
    }, opts());
}

TEST_P(io_wait, a_plain_thread_can_wait_through_the_scheduler) {
    fd_pair p;
    int got = 0;
    csp_test::run_watched([&] {
        auto sched = start();
        csp::channel<int> done{"done"};
        std::thread waiter([&, sched, out = done.writer(), party = csp::external_party()] {
            // The request lands while the runtime's poll blocks (no timeout).
            const auto ev = csp::io::wait_readable(sched, p.a());
            EXPECT_TRUE(ev.readable());
            got = get_byte(p.a());
            out.write(1);
        });
        std::thread maker([&, party = csp::external_party()] {
            while (sched.stats().armed == 0) std::this_thread::sleep_for(1ms);
            std::this_thread::sleep_for(20ms);
            put_byte(p.b(), 'z');
        });
        done.reader().read();
        waiter.join();
        maker.join();
    }, opts());
    EXPECT_EQ(got, 'z');
}

// A first wait on an fd that is ready already is answered by the kernel:
// no registration, no delivery, from a process, a select and a plain thread.
TEST_P(io_wait, a_first_wait_on_a_ready_fd_asks_the_kernel_and_registers_nothing) {
    fd_pair p;
    std::vector<int> got;
    csp_test::run_watched([&] {
        auto sched = start();
        const auto before = sched.stats();
        put_byte(p.b(), 'a');
        csp::io::wait_readable(p.a());
        got.push_back(get_byte(p.a()));
        put_byte(p.b(), 'b');
        EXPECT_EQ(csp::select(csp::io::readable(p.a()), csp::timeout(10s)), 0u);
        got.push_back(get_byte(p.a()));
        put_byte(p.b(), 'c');
        csp::io::watch w(p.a(), csp::io::interest::read);
        EXPECT_TRUE(w.wait().readable());
        got.push_back(get_byte(p.a()));
        put_byte(p.b(), 'd');
        std::thread([&, sched] {
            csp::io::wait_readable(sched, p.a());
            got.push_back(get_byte(p.a()));
        }).join();
        EXPECT_EQ(sched.stats().delivered, before.delivered);
        EXPECT_EQ(sched.stats().fds, 0u);
        // A writer whose peer is gone hears it the same way, without the scheduler.
        p.close_b();
        EXPECT_THROW(csp::io::wait_writable(p.a()), csp::io::io_error);
        EXPECT_EQ(sched.stats().delivered, before.delivered);
    }, opts());
    EXPECT_EQ(got, (std::vector<int>{'a', 'b', 'c', 'd'}));
}

// A wait on an fd that is ready already is answered without a switch; a
// loop of them must still let the other processes of its worker run
// (csp/preemption.hpp). The byte is never read, so the fd stays readable.
TEST_P(io_wait, a_loop_of_waits_on_a_ready_fd_lets_a_sleeper_run) {
    constexpr int limit = 2'000'000;  // far more than a turn, about a second of polls
    fd_pair p;
    std::atomic<bool> woke{false};
    int waits = 0;
    csp_test::run_watched([&] {
        auto sched = start();
        put_byte(p.b(), 'x');
        csp::par(
            [&] {
                while (!woke.load(std::memory_order_relaxed) && waits < limit) {
                    csp::io::wait_readable(p.a());
                    ++waits;
                }
            },
            [&] {
                csp::sleep_for(1ms);
                woke = true;
            });
    }, opts());
    EXPECT_TRUE(woke.load());
    EXPECT_LT(waits, limit) << "the waiting loop never let the sleeper's timer fire";
}

CSP_ON_EVERY_IO_CONFIG(io_wait);

}  // namespace

TEST(io_config, an_explicit_option_beats_the_environment_and_a_bad_value_is_named) {
    ::setenv("CSP_IO_BACKEND", "epoll", 1);
    csp::run([] {
        EXPECT_EQ(csp::io::start_scheduler(csp::io::scheduler_options{}).backend(), csp::io::backend_kind::poll);
    });
    csp::run([] { EXPECT_EQ(csp::io::this_scheduler().backend(), csp::io::backend_kind::epoll); });
    ::setenv("CSP_IO_BACKEND", "kqueue", 1);
    csp::run([] {
        try {
            csp::io::this_scheduler();
            ADD_FAILURE() << "CSP_IO_BACKEND=kqueue was accepted";
        } catch (const csp::usage_error& e) {
            EXPECT_NE(std::string(e.what()).find("CSP_IO_BACKEND=\"kqueue\""), std::string::npos) << e.what();
        }
    });
    ::unsetenv("CSP_IO_BACKEND");
}
