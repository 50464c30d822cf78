#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "helpers.hpp"

using namespace std::chrono_literals;

namespace {

class deadlock_test : public csp_test::on_threads {};
CSP_ON_1_2_AND_4_THREADS(deadlock_test);

TEST_P(deadlock_test, two_processes_writing_to_each_other_first_are_both_named) {
    csp::channel<int> ab{"a->b"}, ba{"b->a"};
    const std::string report = csp_test::deadlock_report(
        [&] {
            csp::par(csp::proc("alice",
                               [w = ab.writer(), r = ba.reader()] {
                                   w.write(1);
                                   r.read();
                               }),
                     csp::proc("bob", [w = ba.writer(), r = ab.reader()] {
                         w.write(2);
                         r.read();
                     }));
        },
        opts());
    EXPECT_NE(report.find("process 'alice' is blocked writing to channel 'a->b'"), std::string::npos) << report;
    EXPECT_NE(report.find("process 'bob' is blocked writing to channel 'b->a'"), std::string::npos) << report;
}

// Regression: a report of one blocked process ended "(1 blocked processes)".
TEST_P(deadlock_test, one_blocked_process_is_counted_in_the_singular) {
    csp::channel<int> c{"alone"};
    const std::string report = csp_test::deadlock_report([&] { c.reader().read(); }, opts());
    EXPECT_NE(report.find("is blocked reading from channel 'alone'"), std::string::npos) << report;
    EXPECT_NE(report.find("(1 blocked process)"), std::string::npos) << report;
}

TEST_P(deadlock_test, a_cycle_of_five_is_reported_with_every_member) {
    constexpr int n = 5;
    std::vector<csp::channel<int>> ring;
    for (int i = 0; i < n; ++i) ring.emplace_back("ring" + std::to_string(i));
    const std::string report = csp_test::deadlock_report(
        [&] {
            csp::par_for(n, [&](std::size_t i) {
                csp::this_process::set_name("node" + std::to_string(i));
                auto in = ring[i].reader();
                auto out = ring[(i + 1) % n].writer();
                in.read();  // everyone waits for a token nobody sends
                out.write(1);
            });
        },
        opts());
    for (int i = 0; i < n; ++i) {
        const std::string line =
            "process 'node" + std::to_string(i) + "' is blocked reading from channel 'ring" + std::to_string(i) + "'";
        EXPECT_NE(report.find(line), std::string::npos) << line << "\n" << report;
    }
    EXPECT_NE(report.find("process 'main' is blocked waiting for 5 child processes"), std::string::npos) << report;
}

TEST_P(deadlock_test, unnamed_processes_get_their_place_in_the_par_tree) {
    csp::channel<int> c;
    const std::string report = csp_test::deadlock_report(
        [&] { csp::par([] {}, [&] { csp::par([] {}, [r = c.reader()] { r.read(); }); }); }, opts());
    EXPECT_NE(report.find("process 'main.1.1' is blocked reading from channel#"), std::string::npos) << report;
}

// Default names point at the code: an unnamed channel by where it was made,
// a process by the run() or par_for() that started it.
TEST_P(deadlock_test, unnamed_channels_and_replicated_processes_say_where_they_were_made) {
    csp::channel<int> c;
    const int channel_line = __LINE__ - 1;
    int par_for_line = 0;
    const std::string report = csp_test::deadlock_report(
        [&] {
            par_for_line = __LINE__ + 1;
            csp::par_for(2, [r = c.reader()](std::size_t) { r.read(); });
        },
        opts());
    EXPECT_NE(report.find("(made at deadlock_test.cpp:" + std::to_string(channel_line) + ")"), std::string::npos)
        << report;
    EXPECT_NE(report.find("process 'main.0' is blocked reading from channel#"), std::string::npos) << report;
    EXPECT_NE(report.find("(started at deadlock_test.cpp:" + std::to_string(par_for_line) + ")"), std::string::npos)
        << report;
    // Named ones keep their names alone.
    EXPECT_EQ(csp::channel<int>("jobs").label(), "channel 'jobs'");
}

// Regression: an unnamed barrier showed in the report as "barrier" alone,
// which does not say which of a program's barriers it was.
TEST_P(deadlock_test, an_unnamed_barrier_in_the_report_says_where_it_was_made) {
    csp::barrier b(2);
    const int barrier_line = __LINE__ - 1;
    const std::string report = csp_test::deadlock_report([&] { b.sync(); }, opts());
    EXPECT_NE(report.find("is blocked syncing on barrier (made at deadlock_test.cpp:" + std::to_string(barrier_line) +
                          ")"),
              std::string::npos)
        << report;
    EXPECT_EQ(csp::barrier(1, "phase").label(), "barrier 'phase'");
}

TEST_P(deadlock_test, a_process_waiting_on_a_timer_is_not_deadlocked) {
    csp::channel<int> c;
    int got = 0;
    csp_test::run_watched(
        [&] {
            csp::par([&, r = c.reader()] { got = r.read(); },
                     [w = c.writer()] {
                         csp::sleep_for(50ms);  // the reader is alone and blocked meanwhile
                         w.write(3);
                     });
        },
        opts());
    EXPECT_EQ(got, 3);
}

TEST_P(deadlock_test, a_select_with_a_timeout_is_not_deadlocked) {
    csp::channel<int> c;
    std::size_t chosen = 9;
    csp_test::run_watched(
        [&] {
            int v;
            auto r = c.reader();
            chosen = csp::select(csp::input(r, v), csp::timeout(30ms));
        },
        opts());
    EXPECT_EQ(chosen, 1u);
}

TEST_P(deadlock_test, a_barrier_nobody_completes_is_reported) {
    csp::barrier b(3, "meet");
    const std::string report =
        csp_test::deadlock_report([&] { csp::par([&] { b.sync(); }, [&] { b.sync(); }); }, opts());
    EXPECT_NE(report.find("syncing on barrier 'meet'"), std::string::npos) << report;
}

TEST_P(deadlock_test, an_external_party_keeps_the_runtime_from_reporting_a_deadlock) {
    csp::channel<int> c;
    int got = 0;
    csp_test::run_watched(
        [&] {
            std::thread t([w = c.writer(), party = csp::external_party()] {
                std::this_thread::sleep_for(50ms);
                w.write(11);
            });
            got = c.reader().read();
            t.join();
        },
        opts());
    EXPECT_EQ(got, 11);
}

TEST_P(deadlock_test, a_deadlock_after_the_last_external_party_left_is_still_found) {
    csp::channel<int> c{"forever"};
    const std::string report = csp_test::deadlock_report(
        [&] {
            std::thread t([party = csp::external_party()] { std::this_thread::sleep_for(30ms); });
            t.detach();
            c.reader().read();
        },
        opts());
    EXPECT_NE(report.find("reading from channel 'forever'"), std::string::npos) << report;
}

// Regression: a channel operation, a select or a barrier sync on the
// program's only thread, outside any runtime, waited for ever in silence
// (Go reports the same program: "all goroutines are asleep"). Each runs in
// a child process, where the test's own threads do not exist.
template <class Body>
void expect_lone_thread_deadlock(Body body, const std::string& expected) {
    EXPECT_EXIT(
        {
            ::alarm(20);  // a hang fails the test with SIGALRM
            try {
                body();
            } catch (const csp::deadlock_error& e) {
                const std::string what = e.what();
                if (what.find(expected) != std::string::npos &&
                    what.find("no other thread exists that could wake it") != std::string::npos)
                    std::_Exit(0);
                std::fprintf(stderr, "%s\n", what.c_str());
                std::_Exit(2);
            }
            std::_Exit(1);
        },
        ::testing::ExitedWithCode(0), "");
}

TEST(deadlock_outside_a_runtime, the_programs_only_thread_blocked_for_good_gets_a_deadlock_error) {
    csp::channel<int> c;
    const int line = __LINE__ - 1;
    expect_lone_thread_deadlock([&] { c.writer().write(1); },
                                "the program's only thread is blocked writing to channel#");
    expect_lone_thread_deadlock([&] { c.reader().read(); },
                                "reading from " + c.label());
    EXPECT_NE(c.label().find("(made at deadlock_test.cpp:" + std::to_string(line) + ")"), std::string::npos);
    expect_lone_thread_deadlock(
        [&] {
            int v;
            csp::channel<int> d{"d"};
            csp::select(csp::input(c.reader(), v), csp::input(d.reader(), v));
        },
        "the program's only thread is blocked");
    csp::barrier b(2, "phase");
    expect_lone_thread_deadlock([&] { b.sync(); }, "blocked syncing on barrier 'phase'");
}

// What may still come is not a deadlock: a select with a timeout, and a
// thread that will write.
TEST(deadlock_outside_a_runtime, a_timed_wait_or_a_thread_that_will_write_is_no_deadlock) {
    EXPECT_EXIT(
        {
            ::alarm(20);
            csp::channel<int> c;
            int v = 0;
            if (csp::select(csp::input(c.reader(), v), csp::timeout(20ms)) != 1) std::_Exit(3);
            std::thread t([w = c.writer()] {
                std::this_thread::sleep_for(50ms);
                w.write(5);
            });
            v = c.reader().read();
            t.join();
            std::_Exit(v == 5 ? 0 : 4);
        },
        ::testing::ExitedWithCode(0), "");
}

}  // namespace
