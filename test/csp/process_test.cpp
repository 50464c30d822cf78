#include <algorithm>
#include <atomic>
#include <cfenv>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "csp/process_group.hpp"
#include "helpers.hpp"

using namespace std::chrono_literals;

namespace {

class process_test : public csp_test::on_threads {};
CSP_ON_1_2_AND_4_THREADS(process_test);

TEST_P(process_test, run_returns_the_root_result) {
    EXPECT_EQ(csp::run([] { return 6 * 7; }, opts()), 42);
}

TEST_P(process_test, par_returns_every_branch_result_in_order) {
    auto [a, b, c] = csp::run(
        [] { return csp::par([] { return 1; }, [] { return std::string("two"); }, [] {}); }, opts());
    EXPECT_EQ(a, 1);
    EXPECT_EQ(b, "two");
    (void)c;  // std::monostate for the void branch
}

TEST_P(process_test, par_for_returns_results_in_index_order) {
    const auto squares =
        csp::run([] { return csp::par_for(50, [](std::size_t i) { return i * i; }); }, opts());
    ASSERT_EQ(squares.size(), 50u);
    for (std::size_t i = 0; i < 50; ++i) EXPECT_EQ(squares[i], i * i);
}

TEST_P(process_test, par_waits_for_every_branch_then_rethrows_the_first_failure) {
    std::atomic<bool> slow_branch_finished{false};
    try {
        csp::run(
            [&] {
                csp::par([] { throw std::runtime_error("branch failed"); },
                         [&] {
                             csp::sleep_for(30ms);
                             slow_branch_finished = true;
                         });
            },
            opts());
        FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "branch failed");
    }
    EXPECT_TRUE(slow_branch_finished.load());
}

// A callable whose copy throws once `copies` reaches `fail_at`.
struct fragile {
    std::atomic<int>* copies;
    int fail_at;
    std::atomic<int>* finished;
    fragile(std::atomic<int>* c, int f, std::atomic<int>* done) : copies(c), fail_at(f), finished(done) {}
    fragile(const fragile& o) : copies(o.copies), fail_at(o.fail_at), finished(o.finished) {
        if (++*copies == fail_at) throw std::runtime_error("copy failed");
    }
    fragile(fragile&&) noexcept = default;
    void operator()(std::size_t = 0) const {
        csp::sleep_for(20ms);  // still running when the failing copy happens
        ++*finished;
    }
};

// Regression: a par_for whose body's copy for its third branch threw left
// par_for at once, while the two branches already started still ran and
// wrote to the results and the join state in its frame (a use after return).
// Now the error leaves only after the started branches have finished.
TEST_P(process_test, a_failed_copy_of_a_par_for_body_waits_for_the_started_branches) {
    std::atomic<int> copies{0}, finished{0};
    int finished_when_caught = -1;
    std::string what;
    csp_test::run_watched(
        [&] {
            try {
                csp::par_for(5, fragile(&copies, 3, &finished));
            } catch (const std::runtime_error& e) {
                finished_when_caught = finished.load();
                what = e.what();
            }
        },
        opts());
    EXPECT_EQ(what, "copy failed");
    EXPECT_EQ(finished_when_caught, 2);
    EXPECT_EQ(finished.load(), 2);
}

// The same for par(): a branch passed as an lvalue is copied into its
// process; the first branch has started by then.
TEST_P(process_test, a_failed_copy_of_a_par_branch_waits_for_the_started_ones) {
    std::atomic<int> copies{0}, finished{0};
    int finished_when_caught = -1;
    csp_test::run_watched(
        [&] {
            const fragile branch(&copies, 1, &finished);
            try {
                csp::par([&] { csp::sleep_for(20ms); ++finished; }, branch);
            } catch (const std::runtime_error&) {
                finished_when_caught = finished.load();
            }
            // The runtime still counts its processes right: more work runs and ends.
            EXPECT_EQ(csp::par_for(3, [](std::size_t i) { return i; }).size(), 3u);
        },
        opts());
    EXPECT_EQ(finished_when_caught, 1);
}

// A process group member that cannot be started is not waited for: the
// group's wait (and its destructor) returns, and the run ends.
TEST_P(process_test, a_process_group_member_that_fails_to_start_is_not_waited_for) {
    std::atomic<int> copies{0}, finished{0};
    bool thrown = false;
    csp_test::run_watched(
        [&] {
            csp::process_group g;
            g.spawn([&] { ++finished; });
            const fragile member(&copies, 1, &finished);
            try {
                g.spawn(member);
            } catch (const std::runtime_error&) {
                thrown = true;
            }
            g.spawn([&] { ++finished; });
            g.wait();
        },
        opts());
    EXPECT_TRUE(thrown);
    EXPECT_EQ(finished.load(), 2);
}

TEST(process, seq_runs_steps_in_order_and_returns_their_results) {
    std::vector<int> order;
    auto [x, y] = csp::run([&] {
        return csp::seq([&] { order.push_back(1); return 10; }, [&] { order.push_back(2); return 20; });
    });
    EXPECT_EQ(order, (std::vector<int>{1, 2}));
    EXPECT_EQ(x + y, 30);
}

TEST(process, nested_pars_and_many_processes) {
    std::atomic<int> leaves{0};
    csp::run([&] {
        csp::par_for(10, [&](std::size_t) { csp::par_for(100, [&](std::size_t) { ++leaves; }); });
    });
    EXPECT_EQ(leaves.load(), 1000);
}

TEST(process, names_default_to_the_place_in_the_par_tree) {
    std::vector<std::string> names(3);
    csp::run([&] {
        names[0] = csp::this_process::name();
        csp::par([&] { names[1] = csp::this_process::name(); },
                 csp::proc("worker", [&] { names[2] = csp::this_process::name(); }));
    });
    EXPECT_EQ(names[0], "main");
    EXPECT_EQ(names[1], "main.0");
    EXPECT_EQ(names[2], "worker");
}

TEST(process, par_outside_a_runtime_is_a_usage_error) {
    EXPECT_THROW(csp::par([] {}), csp::usage_error);
}

// Regression: {.threads = 100000} started that many threads (a typo for
// 10 took a minute and all the machine's thread slots); none was refused.
TEST(process, a_thread_count_of_zero_or_past_the_limit_is_refused_with_its_value) {
    auto refusal = [](std::size_t threads) {
        try {
            csp::run([] {}, {.threads = threads});
        } catch (const csp::usage_error& e) {
            return std::string(e.what());
        }
        return std::string("ran");
    };
    EXPECT_EQ(refusal(0), "runtime_options::threads must be at least 1");
    EXPECT_EQ(refusal(100000), "runtime_options::threads is 100000: at most 1024 worker threads");
    EXPECT_EQ(refusal(csp::runtime_options::max_threads + 1),
              "runtime_options::threads is 1025: at most 1024 worker threads");
    EXPECT_EQ(csp::run([] { return 7; }, {.threads = 2}), 7) << "a refusal leaves nothing behind";
}

// Regression: {.stack_size = 1 << 62} threw a bare std::bad_alloc (the
// pool's first region of 16 stacks overflowed its size to 0).
TEST(process, a_stack_size_past_one_gib_is_refused_with_its_value) {
    std::string refused;
    try {
        csp::run([] {}, {.stack_size = std::size_t{1} << 62});
    } catch (const csp::usage_error& e) {
        refused = e.what();
    }
    EXPECT_EQ(refused,
              "runtime_options::stack_size is 4611686018427387904 bytes: at most 1073741824 (1 GiB) per process");
    EXPECT_EQ(csp::run([] { return 7; }, {.stack_size = csp::runtime_options::max_stack_size}), 7)
        << "the largest size allowed runs";
}

TEST(process, runtimes_do_not_nest) {
    csp::run([] { EXPECT_THROW(csp::run([] {}), csp::usage_error); });
}

TEST_P(process_test, a_plain_thread_writes_to_a_process_reader) {
    constexpr int n = 2000;
    csp::channel<int> c;
    long sum = 0;
    csp::run(
        [&] {
            std::thread t([w = c.writer(), party = csp::external_party()] {
                for (int i = 1; i <= n; ++i) w.write(i);
            });
            auto r = c.reader();
            for (int i = 1; i <= n; ++i) sum += r.read();
            t.join();
        },
        opts());
    EXPECT_EQ(sum, static_cast<long>(n) * (n + 1) / 2);
}

TEST_P(process_test, a_plain_thread_reads_from_a_process_writer) {
    constexpr int n = 2000;
    csp::channel<int> c;
    long sum = 0;
    std::thread t([&, r = c.reader()] {
        for (int i = 1; i <= n; ++i) sum += r.read();
    });
    csp::run(
        [&] {
            auto w = c.writer();
            for (int i = 1; i <= n; ++i) w.write(i);
        },
        opts());
    t.join();
    EXPECT_EQ(sum, static_cast<long>(n) * (n + 1) / 2);
}

TEST(process, one_runtime_after_another_on_the_same_thread) {
    for (int round = 0; round < 20; ++round) {
        csp::channel<int> c;
        const auto [unused, got] = csp::run([&] {
            return csp::par([w = c.writer(), round] { w.write(round); }, [r = c.reader()] { return r.read(); });
        }, {.threads = 1 + static_cast<std::size_t>(round % 2)});
        (void)unused;
        ASSERT_EQ(got, round);
    }
}

// Regression: a process group kept one join record per member for ever, so
// a server starting a process per connection grew with every connection.
TEST_P(process_test, a_process_group_forgets_finished_members) {
    std::atomic<int> ran{0};
    std::size_t most = 0;
    csp::run([&] {
        csp::process_group group;
        for (int i = 0; i < 10000; ++i) {
            group.spawn(csp::proc("member", [&] { ++ran; }));
            if (i % 8 == 0) csp::yield();
            most = std::max(most, group.unjoined());
        }
        group.wait();
        EXPECT_EQ(group.unjoined(), 0u);
    }, opts());
    EXPECT_EQ(ran.load(), 10000);
    EXPECT_LE(most, 256u);  // bounded by twice the members running, not by all ever started
}

// A process's floating-point control (rounding mode) is its own: Boost's
// context switch saves and restores it with the registers, so it stays
// with the process across waits on any worker and never leaks to the others
// that run on its thread (interval arithmetic, reproducible sums).
TEST_P(process_test, a_process_keeps_its_rounding_mode_across_waits) {
    constexpr int rounds = 200;
    std::atomic<int> own{0}, others_default{0};
    csp_test::run_watched(
        [&] {
            csp::channel<int> c;
            csp::par(
                [&] {
                    std::fesetround(FE_UPWARD);
                    for (int r = 0; r < rounds; ++r) {
                        c.writer().write(r);
                        if (std::fegetround() == FE_UPWARD) ++own;
                    }
                    std::fesetround(FE_TONEAREST);
                },
                [&] {
                    for (int r = 0; r < rounds; ++r) {
                        (void)c.reader().read();
                        if (std::fegetround() == FE_TONEAREST) ++others_default;
                        csp::yield();
                    }
                });
        },
        opts());
    EXPECT_EQ(own.load(), rounds);
    EXPECT_EQ(others_default.load(), rounds);
}

}  // namespace

// Regression: while a multi-thread run shut down, a worker still looking for
// work read the queues of workers whose threads had ended and whose policies
// Boost had freed (found by AddressSanitizer). Many short runs on several
// workers, each exchanging values, must end cleanly.
TEST(runtime_shutdown, short_multi_thread_runs_never_touch_a_finished_workers_queue) {
    for (int round = 0; round < 200; ++round) {
        const std::size_t threads = 2 + static_cast<std::size_t>(round % 3);
        csp::channel<int> c;
        int sum = 0;
        csp::run(
            [&] {
                csp::par([&, out = c.writer()] { for (int i = 1; i <= 10; ++i) out.write(i); },
                         [&, in = c.reader()] { for (int i = 1; i <= 10; ++i) sum += in.read(); });
            },
            {.threads = threads});
        ASSERT_EQ(sum, 55) << "round " << round;
    }
}

TEST(process, runtime_threads_names_the_callers_runtime_and_zero_outside_one) {
    EXPECT_EQ(csp::this_process::runtime_threads(), 0u);
    for (std::size_t threads : {1u, 2u, 3u}) {
        const auto seen = csp::run([] { return csp::par([] { return csp::this_process::runtime_threads(); },
                                                        [] { return csp::this_process::runtime_threads(); }); },
                                   csp::runtime_options{.threads = threads});
        EXPECT_EQ(std::get<0>(seen), threads);
        EXPECT_EQ(std::get<1>(seen), threads);
    }
}
