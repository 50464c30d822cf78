// The deadlock report and the IO scheduler: a process waiting on IO can be
// woken from outside, so it is never reported; the scheduler itself, waiting
// for requests by design, never counts as a blocked program process.
#include <chrono>
#include <string>
#include <thread>

#include "test/iosched/fd_pair.hpp"
#include "test/iosched/io_fixture.hpp"

using namespace std::chrono_literals;
using csp_test::fd_pair;
using csp_test::get_byte;
using csp_test::put_byte;

namespace {

class io_deadlock : public csp_test::io_suite {};

TEST_P(io_deadlock, a_process_waiting_on_io_is_not_deadlocked) {
    fd_pair p;
    int got = 0;
    // A plain thread with no external_party: only the fd can wake the process.
    std::thread maker([&] {
        std::this_thread::sleep_for(100ms);
        put_byte(p.b(), 'q');
    });
    csp_test::run_watched([&] {
        start();
        csp::io::wait_readable(p.a());
        got = get_byte(p.a());
    }, opts());
    maker.join();
    EXPECT_EQ(got, 'q');
}

TEST_P(io_deadlock, a_real_deadlock_is_reported_while_the_scheduler_runs) {
    std::string report;
    try {
        csp_test::run_watched([&] {
            start();
            csp::channel<int> a{"a"}, b{"b"};
            csp::par(csp::proc("left", [in = a.reader(), out = b.writer()] { out.write(in.read()); }),
                     csp::proc("right", [in = b.reader(), out = a.writer()] { out.write(in.read()); }));
        }, opts());
    } catch (const csp::deadlock_error& e) {
        report = e.what();
    }
    EXPECT_NE(report.find("'left' is blocked reading from channel 'a'"), std::string::npos) << report;
    EXPECT_NE(report.find("'right' is blocked reading from channel 'b'"), std::string::npos) << report;
    EXPECT_NE(report.find("(3 blocked processes)"), std::string::npos) << report;
    EXPECT_EQ(report.find("iosched"), std::string::npos) << report;
}

TEST_P(io_deadlock, a_program_that_only_sleeps_ends_with_the_scheduler_running) {
    int ticks = 0;
    csp_test::run_watched([&] {
        auto sched = start();
        for (int i = 0; i < 5; ++i) {
            csp::sleep_for(2ms);  // the idle poll doubles as the timer wait
            ++ticks;
        }
        EXPECT_GE(sched.stats().polls, 1u);
    }, opts());
    EXPECT_EQ(ticks, 5);
}

CSP_ON_EVERY_IO_CONFIG(io_deadlock);

}  // namespace
