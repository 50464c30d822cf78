// Socket readiness as a guard in the core's alternation, next to channels
// and timeouts; and guards that lose leave the fd set cleanly.
#include <array>
#include <chrono>
#include <vector>

#include "test/iosched/fd_pair.hpp"
#include "test/iosched/io_fixture.hpp"

using namespace std::chrono_literals;
using csp_test::fd_pair;
using csp_test::get_byte;
using csp_test::put_byte;

namespace {

class io_guard : public csp_test::io_suite {};

using csp_test::set_empties;

TEST_P(io_guard, socket_channel_and_timeout_in_one_select) {
    fd_pair p;
    std::vector<int> chosen;
    int from_channel = 0, from_socket = 0;
    csp_test::run_watched([&] {
        start();
        csp::channel<int> c{"commands"};
        csp::channel<int> step{"step"};
        csp::par(
            [&, in = c.reader(), next = step.writer()] {
                for (int round = 0; round < 3; ++round) {
                    int v = 0;
                    const std::size_t i = csp::select(csp::io::readable(p.a()), csp::input(in, v), csp::timeout(30ms));
                    chosen.push_back(static_cast<int>(i));
                    if (i == 0) from_socket = get_byte(p.a());
                    if (i == 1) from_channel = v;
                    next.write(round);
                }
            },
            [&, out = c.writer(), next = step.reader()] {
                next.read();  // round 0 timed out: nothing was offered
                out.write(42);
                next.read();
                put_byte(p.b(), 's');
                next.read();
            });
    }, opts());
    EXPECT_EQ(chosen, (std::vector<int>{2, 1, 0}));
    EXPECT_EQ(from_channel, 42);
    EXPECT_EQ(from_socket, 's');
}

TEST_P(io_guard, fair_select_over_watches_serves_every_busy_socket) {
    constexpr int n = 4, bytes_each = 300;
    std::array<fd_pair, n> pairs;
    std::array<int, n> served{};
    csp_test::run_watched([&] {
        start();
        // Every socket has all its bytes waiting: a fair alternation must
        // take turns rather than drain the first.
        std::vector<char> bytes(bytes_each);
        for (int k = 0; k < bytes_each; ++k) bytes[k] = static_cast<char>(k);
        for (auto& p : pairs) ASSERT_EQ(::write(p.b(), bytes.data(), bytes.size()), bytes_each);
        std::vector<csp::io::watch> watches;
        for (auto& p : pairs) watches.emplace_back(p.a(), csp::io::interest::read);
        csp::alternation alt;
        std::array<csp::io::io_events, n> ev;
        int total = 0, first_round_distinct = 0;
        std::array<bool, n> seen{};
        while (total < n * bytes_each) {
            const std::size_t i = alt.fair_select(watches[0].ready(ev[0]), watches[1].ready(ev[1]),
                                                  watches[2].ready(ev[2]), watches[3].ready(ev[3]));
            EXPECT_TRUE(ev[i].readable());
            const int b = get_byte(pairs[i].a());
            ASSERT_GE(b, 0);
            EXPECT_EQ(b, served[i] % 256);
            ++served[i];
            ++total;
            if (total <= n && !seen[i]) ++first_round_distinct, seen[i] = true;
        }
        EXPECT_EQ(first_round_distinct, n);
    }, opts());
    for (int s : served) EXPECT_EQ(s, bytes_each);
}

TEST_P(io_guard, a_guard_that_timed_out_leaves_the_set) {
    fd_pair p;
    int got = 0;
    csp_test::run_watched([&] {
        auto sched = start();
        EXPECT_EQ(csp::select(csp::io::readable(p.a()), csp::timeout(10ms)), 1u);
        EXPECT_TRUE(set_empties(sched));
        // The fd is not reported to the select that has moved on: the next
        // waiter gets the readiness, and at most one delivery happens (none
        // if the byte was there before the wait, which then asks the kernel).
        const auto delivered = sched.stats().delivered;
        csp::par([&] { csp::io::wait_readable(p.a()); got = get_byte(p.a()); },
                 [&] { put_byte(p.b(), 'n'); });
        EXPECT_LE(sched.stats().delivered, delivered + 1);
    }, opts());
    EXPECT_EQ(got, 'n');
}

TEST_P(io_guard, a_poisoned_alternation_leaves_the_set) {
    fd_pair p;
    bool poisoned = false;
    csp_test::run_watched([&] {
        auto sched = start();
        csp::channel<int> c{"control"};
        csp::par(
            [&, in = c.reader()] {
                int v;
                try {
                    csp::select(csp::io::readable(p.a()), csp::input(in, v));
                } catch (const csp::poisoned_error&) {
                    poisoned = true;
                }
            },
            [&, out = c.writer()] {
                csp_test::wait_until_armed(sched);
                out.poison();
            });
        EXPECT_TRUE(set_empties(sched));
        put_byte(p.b(), 'x');  // ready now, and nobody registered: nothing delivered
        const auto delivered = sched.stats().delivered;
        csp::sleep_for(10ms);
        EXPECT_EQ(sched.stats().delivered, delivered);
        EXPECT_EQ(get_byte(p.a()), 'x');  // the byte is still there
    }, opts());
    EXPECT_TRUE(poisoned);
}

TEST_P(io_guard, a_watch_destroyed_by_an_exception_leaves_the_set) {
    fd_pair p;
    csp_test::run_watched([&] {
        auto sched = start();
        try {
            csp::io::watch w(p.a(), csp::io::interest::read);
            csp::io::io_events ev;
            EXPECT_EQ(csp::select(w.ready(ev), csp::timeout(5ms)), 1u);
            throw std::runtime_error("the process gives up");
        } catch (const std::runtime_error&) {
        }
        EXPECT_TRUE(set_empties(sched));
    }, opts());
}

TEST_P(io_guard, a_deadlock_report_names_io_waits_only_when_nothing_can_wake_them) {
    fd_pair p;
    std::string report;
    csp_test::run_watched([&] {
        start();
        csp::channel<int> never{"never"};
        csp::par([&, in = never.reader()] {
            // This process waits on a channel nobody will write: with the
            // socket guard enabled it is not deadlocked (bytes may come)...
            int v;
            const std::size_t i = csp::select(csp::io::readable(p.a()), csp::input(in, v));
            EXPECT_EQ(i, 0u);
            EXPECT_EQ(get_byte(p.a()), 'w');
            // ...without it, it is.
            try {
                in.read();
            } catch (const csp::deadlock_error& e) {
                report = e.what();
            }
        }, [&] {
            csp::sleep_for(20ms);
            put_byte(p.b(), 'w');
        });
    }, opts());
    EXPECT_NE(report.find("reading from channel 'never'"), std::string::npos) << report;
    EXPECT_EQ(report.find("iosched"), std::string::npos) << report;
}

CSP_ON_EVERY_IO_CONFIG(io_guard);

}  // namespace
