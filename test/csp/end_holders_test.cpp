// Who holds a channel end: the two traps of ends shared by accident.
//  - par_for's branches that capture one end each hold it on their own, so the
//    first branch to retire does not retire the side for all of them.
//  - Ends made on the main thread before run() do not switch the deadlock
//    report off once the runtime has them, nor in a program with no thread
//    of its own.
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <string>
#include <thread>
#include <unistd.h>

#include "csp/detail/thread_census.hpp"
#include "helpers.hpp"

using namespace std::chrono_literals;

namespace {

class end_holders : public csp_test::on_threads {};
CSP_ON_1_2_AND_4_THREADS(end_holders);

constexpr int workers = 8;
constexpr int per_worker = 200;

// Reads until retirement; returns how many values came and their sum.
std::pair<int, long> collect(const csp::reader<int>& in) {
    int count = 0;
    long sum = 0;
    csp_test::read_until<csp::retired_error>(in, [&](int v) {
        ++count;
        sum += v;
    });
    return {count, sum};
}

constexpr long expected_sum() {
    long s = 0;
    for (int w = 0; w < workers; ++w)
        for (int k = 0; k < per_worker; ++k) s += w * 1000 + k;
    return s;
}

// Runs `workers_of(results)` beside a collector that reads `results` until
// it retires, and checks that every worker's values arrived first.
template <class Workers>
void expect_every_value_before_retirement(csp::runtime_options o, Workers workers_of) {
    csp::channel<int> results{"results"};
    std::pair<int, long> got;
    csp_test::run_watched(
        [&] { csp::par([&] { workers_of(results); }, [&, in = results.reader()] { got = collect(in); }); }, o);
    EXPECT_EQ(got.first, workers * per_worker);
    EXPECT_EQ(got.second, expected_sum());
}

TEST_P(end_holders, par_for_branches_capturing_one_writer_retire_only_their_own) {
    expect_every_value_before_retirement(opts(), [](csp::channel<int>& results) {
        csp::par_for(workers, [out = results.writer()](std::size_t w) {
            for (int k = 0; k < per_worker; ++k) {
                out.write(static_cast<int>(w) * 1000 + k);
                if (k % 16 == 0) csp::yield();
            }
            out.retire();
        });
    });
}

TEST_P(end_holders, a_named_par_for_body_still_lets_the_side_retire_when_every_branch_has) {
    expect_every_value_before_retirement(opts(), [](csp::channel<int>& results) {
        auto body = [out = results.writer()](std::size_t w) {
            for (int k = 0; k < per_worker; ++k) out.write(static_cast<int>(w) * 1000 + k);
            out.retire();
        };
        csp::par_for(workers, body);  // body outlives the branches
    });
}

TEST_P(end_holders, par_for_branches_each_own_what_the_body_captured_by_value) {
    std::vector<int> seen(4, -1);
    csp_test::run_watched(
        [&] {
            csp::par_for(4, [count = 0, &seen](std::size_t i) mutable {
                ++count;  // a shared body would count past 1
                csp::yield();
                seen[i] = count;
            });
        },
        opts());
    EXPECT_EQ(seen, std::vector<int>(4, 1));
}

TEST_P(end_holders, copies_inside_one_process_still_share_their_holder) {
    csp::channel<int> c{"c"};
    csp_test::run_watched(
        [&] {
            csp::par(
                [w = c.writer()] {
                    auto copy = w;
                    copy.write(1);
                    copy.retire();
                    EXPECT_THROW(w.write(2), csp::retired_error);  // the same holder has retired
                },
                [r = c.reader()] {
                    EXPECT_EQ(r.read(), 1);
                    EXPECT_THROW(r.read(), csp::retired_error);
                });
        },
        opts());
}

TEST_P(end_holders, a_par_for_copy_of_a_retired_end_is_retired_too) {
    csp::channel<int> c{"c"};
    csp_test::run_watched(
        [&] {
            auto w = c.writer();
            w.retire();
            auto refused = csp::par_for(3, [w](std::size_t) {
                try {
                    w.write(1);
                } catch (const csp::retired_error&) {
                    return true;
                }
                return false;
            });
            EXPECT_EQ(refused, std::vector<bool>(3, true));
        },
        opts());
}

TEST_P(end_holders, ends_made_in_main_before_run_still_get_the_deadlock_report) {
    // listing1's shape, with each process waiting for the other first. The
    // ends are made here, outside any runtime, on a thread that is not in run.
    csp::channel<int> ab{"a->b"}, ba{"b->a"};
    auto alice = [w = ab.writer(), r = ba.reader()] {
        r.read();
        w.write(1);
    };
    auto bob = [w = ba.writer(), r = ab.reader()] {
        r.read();
        w.write(2);
    };
    const std::string report =
        csp_test::deadlock_report([&] { csp::par(csp::proc("alice", alice), csp::proc("bob", bob)); }, opts());
    EXPECT_NE(report.find("process 'alice' is blocked reading from channel 'b->a'"), std::string::npos) << report;
    EXPECT_NE(report.find("process 'bob' is blocked reading from channel 'a->b'"), std::string::npos) << report;
}

TEST_P(end_holders, ends_made_in_main_and_moved_into_run_get_the_deadlock_report) {
    csp::channel<int> c{"never written"};
    auto unused = c.writer();
    const std::string report = csp_test::deadlock_report([r = c.reader(), w = std::move(unused)] { r.read(); }, opts());
    EXPECT_NE(report.find("reading from channel 'never written'"), std::string::npos) << report;
}

TEST_P(end_holders, a_thread_holding_an_end_made_outside_the_runtime_is_waited_for) {
    csp::channel<int> c{"from a thread"};
    std::thread t([w = c.writer()] {
        std::this_thread::sleep_for(50ms);  // every process is blocked meanwhile
        w.write(7);
    });
    int got = 0;
    csp_test::run_watched([&, r = c.reader()] { got = r.read(); }, opts());
    t.join();
    EXPECT_EQ(got, 7);
}

// A program that never starts a thread of its own gets the report even for an
// end made in main that no process ever took. Run in a child process, where
// the test's own threads do not exist.
TEST_P(end_holders, a_program_without_threads_of_its_own_gets_the_report_for_an_end_no_process_took) {
    const csp::runtime_options o = opts();
    EXPECT_EXIT(
        {
            ::alarm(20);  // a hang fails the test with SIGALRM
            csp::channel<int> c{"forgotten"};
            auto r = c.reader();
            auto w = c.writer();  // made here, never handed to anyone
            try {
                csp::run([&] { r.read(); }, o);
            } catch (const csp::deadlock_error& e) {
                std::_Exit(std::string(e.what()).find("reading from channel 'forgotten'") != std::string::npos ? 0
                                                                                                        : 2);
            }
            std::_Exit(1);
        },
        ::testing::ExitedWithCode(0), "");
}

// Runs `b_root` in a runtime on a thread of its own once `b_may_start`
// returns, and `a_root` in one on this thread, both with `o`: A's root must
// return 42 and neither runtime fail.
template <class Wait, class B, class A>
void expect_42_across_two_runtimes(const csp::runtime_options& o, Wait b_may_start, B b_root, A a_root) {
    std::string b_error;
    std::thread b([&] {
        b_may_start();
        try {
            csp::run(std::move(b_root), o);
        } catch (const std::exception& e) {
            b_error = e.what();
        }
    });
    int got = 0;
    try {
        got = csp::run(std::move(a_root), o);
    } catch (const std::exception& e) {
        ADD_FAILURE() << "runtime A: " << e.what();
    }
    b.join();
    EXPECT_EQ(got, 42);
    EXPECT_EQ(b_error, "");
}

// Regression: two runtimes on two threads sharing a channel made in main:
// runtime A's only process waited to read while runtime B's slept before
// writing, and A reported a deadlock, since every thread alive was some
// runtime's worker and the ends had been taken by processes. An outside end
// taken into two runtimes makes the channel one between them, not reported
// while both run.
TEST_P(end_holders, a_channel_between_two_runtimes_is_no_deadlock_while_both_run) {
    for (int round = 0; round < 3; ++round) {
        csp::channel<int> c{"between"};
        auto r = c.reader();
        auto w = c.writer();
        expect_42_across_two_runtimes(
            opts(), [] {},
            [w] {
                csp::sleep_for(50ms);
                w.write(42);
            },
            [r] { return r.read(); });
    }
}

// Regression: a channel made inside runtime A and handed to a thread that
// runs runtime B, whose process made the writing end and computed before
// writing: A reported a deadlock (every thread alive was some runtime's
// worker, and neither end had been made outside a runtime). Ends made by
// processes of two runtimes make the channel one between them, as ends
// taken into two do.
TEST_P(end_holders, a_channel_made_in_one_runtime_with_an_end_made_in_another_is_no_deadlock_while_both_run) {
    for (int round = 0; round < 3; ++round) {
        std::atomic<csp::channel<int>*> handed{nullptr};
        std::atomic<bool> writer_made{false};
        expect_42_across_two_runtimes(
            opts(), [&] { while (handed.load() == nullptr) std::this_thread::sleep_for(1ms); },
            [&] {
                auto w = handed.load()->writer();
                writer_made = true;
                csp::sleep_for(50ms);
                w.write(42);
            },
            [&] {
                csp::channel<int> c{"made in A"};
                auto r = c.reader();
                handed = &c;
                while (!writer_made.load()) csp::sleep_for(1ms);
                return r.read();
            });
    }
}

// Regression (end_holders.a_channel_between_two_runtimes_is_no_deadlock_while_both_run
// failed about once in 40 runs on a loaded machine): the detector read the
// number of runtimes, then the kernel's thread count and the number of
// workers; a thread that started its runtime between those reads was
// neither another runtime nor an outside thread, and a wait on a channel it
// held an end of was reported as a deadlock. One word holds both counts now.
TEST(thread_census, a_thread_starting_and_ending_runtimes_is_always_one_that_may_act) {
    namespace census = csp::detail::thread_census;
    if (!census::only_thread()) GTEST_SKIP() << "other threads would make every answer true";
    census::run_started();  // this thread: the worker of a runtime
    census::begin_walk();
    const bool alone = !census::others_may_act();
    std::atomic<bool> stop{false};
    std::thread other([&] {
        while (!stop.load()) {
            census::run_started();
            census::run_ended();
        }
    });
    int missed = 0;
    for (int i = 0; i < 20000; ++i) {
        census::begin_walk();
        if (!census::others_may_act()) ++missed;
    }
    stop = true;
    other.join();
    census::run_ended();
    EXPECT_TRUE(alone) << "a runtime's only worker, with no other thread, is alone";
    EXPECT_EQ(missed, 0);
}

}  // namespace
