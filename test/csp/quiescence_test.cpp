// Samples of a runtime's program processes for a detector that spans
// several runtimes (csp/quiescence.hpp), and failing them with its report.
#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "csp/csp.hpp"
#include "csp/process_group.hpp"
#include "csp/quiescence.hpp"

using namespace std::chrono_literals;

namespace {

csp::runtime_options threads(std::size_t n) {
    csp::runtime_options o;
    o.threads = n;
    return o;
}

class quiescence : public ::testing::TestWithParam<std::size_t> {};

TEST_P(quiescence, a_sample_names_the_blocked_program_processes_and_not_the_daemon_taking_it) {
    csp::run([] {
        csp::channel<int> c{"never written yet"};
        csp::process_group watcher;
        std::optional<csp::quiet_sample> seen;
        watcher.spawn(csp::proc("watcher",
                                [&] {
                                    seen = csp::sample_quiescence(5s, true);
                                    c.writer().write(1);  // and now let main go on
                                }),
                      csp::process_kind::daemon);
        EXPECT_EQ(c.reader().read(), 1);
        watcher.wait();
        ASSERT_TRUE(seen.has_value());
        EXPECT_TRUE(seen->quiet);
        ASSERT_EQ(seen->blocked.size(), 1u);
        EXPECT_NE(seen->blocked[0].find("process 'main' is blocked"), std::string::npos) << seen->blocked[0];
        EXPECT_NE(seen->blocked[0].find("never written yet"), std::string::npos) << seen->blocked[0];
    }, threads(GetParam()));
}

// Regression: a patience of milliseconds::max() (no limit) overflowed into
// a deadline in the past, and the call gave up at once with no sample.
TEST_P(quiescence, a_patience_of_the_largest_duration_waits_for_the_sample) {
    csp::run([] {
        csp::channel<int> c{"c"};
        csp::process_group watcher;
        std::optional<csp::quiet_sample> seen;
        bool aborted = false;
        watcher.spawn(csp::proc("watcher",
                                [&] {
                                    seen = csp::sample_quiescence(std::chrono::milliseconds::max());
                                    aborted = csp::abort_blocked("no limit", std::chrono::milliseconds::max());
                                }),
                      csp::process_kind::daemon);
        try {
            c.reader().read();
        } catch (const csp::deadlock_error& e) {
            EXPECT_EQ(std::string(e.what()), "no limit");
        }
        watcher.wait();
        ASSERT_TRUE(seen.has_value());
        EXPECT_TRUE(seen->quiet);
        EXPECT_TRUE(aborted);
    }, threads(GetParam()));
}

TEST_P(quiescence, a_process_that_sleeps_or_computes_is_not_quiet) {
    csp::run([] {
        csp::process_group watcher;
        std::optional<csp::quiet_sample> sleeping;
        watcher.spawn(csp::proc("watcher", [&] { sleeping = csp::sample_quiescence(5s); }), csp::process_kind::daemon);
        csp::sleep_for(300ms);  // a timer will wake it: not blocked for good
        watcher.wait();
        ASSERT_TRUE(sleeping.has_value());
        EXPECT_FALSE(sleeping->quiet);
    }, threads(GetParam()));
}

TEST_P(quiescence, activity_changes_when_a_blocked_process_ran_in_between) {
    csp::run([] {
        csp::channel<int> c{"c"};
        csp::channel<int> back{"back"};
        csp::process_group watcher;
        std::optional<csp::quiet_sample> first, second, third;
        watcher.spawn(csp::proc("watcher",
                                [&] {
                                    first = csp::sample_quiescence(5s);
                                    second = csp::sample_quiescence(5s);
                                    c.writer().write(1);                 // main runs once...
                                    EXPECT_EQ(back.reader().read(), 2);  // ...and blocks on c again
                                    third = csp::sample_quiescence(5s);
                                    c.writer().write(0);
                                }),
                      csp::process_kind::daemon);
        while (c.reader().read() != 0) back.writer().write(2);
        watcher.wait();
        ASSERT_TRUE(first && second && third);
        EXPECT_TRUE(first->quiet && second->quiet && third->quiet);
        EXPECT_EQ(first->activity, second->activity);  // nothing ran between them
        EXPECT_NE(second->activity, third->activity);
    }, threads(GetParam()));
}

TEST_P(quiescence, abort_blocked_fails_every_blocked_program_process_with_the_report) {
    int failed = 0;
    csp::run([&] {
        csp::channel<int> a{"a"}, b{"b"};
        csp::process_group watcher;
        watcher.spawn(csp::proc("watcher",
                                [&] {
                                    auto s = csp::sample_quiescence(5s);
                                    if (s && s->quiet) {
                                        EXPECT_TRUE(csp::abort_blocked("job-wide: everyone waits"));
                                    }
                                }),
                      csp::process_kind::daemon);
        auto wait_on = [&](csp::channel<int>& c) {
            try {
                c.reader().read();
            } catch (const csp::deadlock_error& e) {
                EXPECT_EQ(std::string(e.what()), "job-wide: everyone waits");
                ++failed;
            }
        };
        csp::par([&] { wait_on(a); }, [&] { wait_on(b); });
        watcher.wait();
    }, threads(GetParam()));
    EXPECT_EQ(failed, 2);
}

// The job-wide detector's switch waits only briefly for an abort
// (net/switchboard.cpp): one its patience ran out on must still be served
// at the next idle moment, with its report, not the runtime's own.
TEST_P(quiescence, an_abort_the_patience_ran_out_on_is_served_at_the_next_idle_moment) {
    std::string what;
    std::atomic<bool> gave_up{false};
    csp::run([&] {
        csp::channel<int> c{"c"};
        csp::process_group watcher;
        watcher.spawn(csp::proc("watcher", [&] { gave_up = !csp::abort_blocked("late report", 20ms); }),
                      csp::process_kind::daemon);
        // Never idle meanwhile: main stays ready.
        const auto until = csp::clock::now() + 5s;
        while (!gave_up && csp::clock::now() < until) csp::yield();
        watcher.wait();
        try {
            c.reader().read();
        } catch (const csp::deadlock_error& e) {
            what = e.what();
        }
    }, threads(GetParam()));
    EXPECT_TRUE(gave_up.load());
    EXPECT_EQ(what, "late report");
}

INSTANTIATE_TEST_SUITE_P(threads, quiescence, ::testing::Values(1, 2));

}  // namespace
