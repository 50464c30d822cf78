// Linearizability of polling selects, from the race tests of Go's runtime
// (chan_test.go: TestNonblockSelectRace, TestNonblockSelectRace2) and
// crossbeam-channel (tests/select.rs: linearizable_try, linearizable_timeout;
// tests/golang.rs carries Go's two). In each, at every instant of the select
// one of its channels holds a value (or is closed), so the select must never
// take its skip or its zero timeout. Each runs on 1 and 2 worker threads and
// on plain std::threads.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "helpers.hpp"

namespace {

// Runs a and b concurrently: on two plain threads when `where` is 0, else as
// two processes of a runtime with that many workers.
void two_parties(std::size_t where, const std::function<void()>& a, const std::function<void()>& b) {
    if (where == 0) {
        csp_test::with_watchdog([&] {
            std::thread ta(a), tb(b);
            ta.join();
            tb.join();
        });
    } else {
        csp_test::run_watched([&] { csp::par(a, b); }, {.threads = where});
    }
}

// Waits for `flag` to reach `value`. The parties spin rather than block, so
// that on two cores they run the racing steps at the same moment; they yield
// now and then (every time on a one-worker runtime), so that a party that
// shares its core with the other, or with another test, lets it run. A plain
// thread whose partner has not answered within a few thousand looks has
// probably lost its core to another thread: it sleeps between looks, since
// sched_yield does not give the core away from a busy neighbour (with more
// spinning threads than cores, 100,000 rounds took minutes).
void spin_until(const std::atomic<int>& flag, int value, std::size_t where) {
    for (unsigned k = 1; flag.load(std::memory_order_acquire) < value; ++k) {
        if (where == 0 && k > 4096) std::this_thread::sleep_for(std::chrono::microseconds(20));
        else if (where == 1 || k % 64 == 0) {
            if (where == 0) std::this_thread::yield();
            else csp::yield();
        }
    }
}

constexpr int rounds = 100000;

class select_race : public ::testing::TestWithParam<std::size_t> {};
INSTANTIATE_TEST_SUITE_P(, select_race,
                         ::testing::Values(std::size_t{1}, std::size_t{2}, std::size_t{4}, std::size_t{0}),
                         [](const ::testing::TestParamInfo<std::size_t>& info) {
                             return info.param == 0 ? std::string("plain_threads")
                                                    : std::to_string(info.param) + "_threads";
                         });

// The selecting party's poll, `last` being csp::skip() or a zero timeout. It
// looks at c2 first: the order in which a select looking at one guard at a
// time can miss both (c2 empty when looked at, then c1 emptied after c2 was
// filled). Go and crossbeam poll in random order, so they meet it too.
template <class Last>
bool poll_took_a_channel(const csp::reader<int>& r1, const csp::reader<int>& r2, Last last) {
    int v = 0;
    try {
        return csp::select(csp::input(r2, v), csp::input(r1, v), last) != 2;
    } catch (const csp::poisoned_error&) {
        return true;  // a closed channel is ready too
    }
}

// Takes a value from r if one is there.
void try_take(const csp::reader<int>& r) {
    int v = 0;
    (void)csp::select(csp::input(r, v), csp::skip());
}

// crossbeam's linearizable_try / linearizable_timeout over two channels made
// by `make`: the selector puts a value in c1 and polls c1 and c2; meanwhile
// the other party puts a value in c2 before taking the one in c1.
template <class Last>
void crossbeam_linearizable(std::size_t where, const std::function<csp::channel<int>()>& make, Last last) {
    csp::channel<int> c1 = make(), c2 = make();
    std::atomic<int> started{0}, finished{0};
    int defaults = 0;
    two_parties(
        where,
        [&, s1 = c1.writer(), r1 = c1.reader(), r2 = c2.reader()] {
            for (int i = 1; i <= rounds; ++i) {
                s1.write(1);
                started.store(i, std::memory_order_release);
                if (!poll_took_a_channel(r1, r2, last)) ++defaults;
                spin_until(finished, i, where);
                try_take(r2);
            }
        },
        [&, s2 = c2.writer(), r1 = c1.reader()] {
            for (int i = 1; i <= rounds; ++i) {
                spin_until(started, i, where);
                s2.write(1);
                try_take(r1);
                finished.store(i, std::memory_order_release);
            }
        });
    EXPECT_EQ(defaults, 0) << "a polling select took its default although a channel was ready";
}

const auto bounded = [] { return csp::channel<int>(csp::buffer::fifo(1)); };
const auto unbounded = [] { return csp::channel<int>(csp::buffer::unbounded()); };
const auto zero_timeout = [] { return csp::timeout(std::chrono::nanoseconds(0)); };

TEST_P(select_race, crossbeam_linearizable_try_bounded) { crossbeam_linearizable(GetParam(), bounded, csp::skip()); }
TEST_P(select_race, crossbeam_linearizable_try_unbounded) {
    crossbeam_linearizable(GetParam(), unbounded, csp::skip());
}
TEST_P(select_race, crossbeam_linearizable_timeout_bounded) {
    crossbeam_linearizable(GetParam(), bounded, zero_timeout());
}
TEST_P(select_race, crossbeam_linearizable_timeout_unbounded) {
    crossbeam_linearizable(GetParam(), unbounded, zero_timeout());
}

// Go's TestNonblockSelectRace and TestNonblockSelectRace2: c1 holds a
// value; the selector polls c1 and c2 while the other party makes c2 ready
// (`ready_c2`) and then empties c1. One new channel pair per round, two
// long-lived parties.
void go_nonblock_select_race(std::size_t where, csp::buffer c2_buffer,
                             const std::function<void(csp::channel<int>&)>& ready_c2) {
    std::vector<csp::channel<int>> c1, c2;
    for (int i = 0; i < rounds; ++i) {
        c1.emplace_back(csp::buffer::fifo(1));
        c2.emplace_back(c2_buffer);
        c1.back().writer().write(1);
    }
    std::atomic<int> started{0};
    int defaults = 0;
    two_parties(
        where,
        [&] {
            for (int i = 0; i < rounds; ++i) {
                started.store(i + 1, std::memory_order_release);
                if (!poll_took_a_channel(c1[i].reader(), c2[i].reader(), csp::skip())) ++defaults;
            }
        },
        [&] {
            for (int i = 0; i < rounds; ++i) {
                spin_until(started, i + 1, where);
                ready_c2(c2[i]);
                try_take(c1[i].reader());
            }
        });
    EXPECT_EQ(defaults, 0);
}

// c2 buffered and filled.
TEST_P(select_race, go_nonblock_select_race) {
    go_nonblock_select_race(GetParam(), csp::buffer::fifo(1), [](csp::channel<int>& c2) { c2.writer().write(1); });
}

// c2 unbuffered and closed (poisoned).
TEST_P(select_race, go_nonblock_select_race2) {
    go_nonblock_select_race(GetParam(), csp::buffer::none(), [](csp::channel<int>& c2) { c2.poison(); });
}

// Go's runtime TestSelfSelect: two parties each select over sending to and
// receiving from one channel, in both orders. A select must never meet
// itself (receive its own value through a rendezvous), and on a rendezvous
// every select pairs with one of the other party's, so both finish.
TEST_P(select_race, go_self_select_never_receives_its_own_value) {
    const std::size_t where = GetParam();
    for (const std::size_t capacity : {std::size_t{0}, std::size_t{10}}) {
        csp::channel<int> c{capacity == 0 ? csp::buffer::none() : csp::buffer::fifo(capacity)};
        std::atomic<int> self_receives{0}, done{0};
        auto party = [&](int p) {
            auto r = c.reader();
            auto w = c.writer();
            for (int i = 0; i < 1000; ++i) {
                int v = -1;
                const bool send_first = p == 0 || i % 2 == 0;
                const std::size_t k = send_first ? csp::select(csp::output(w, p), csp::input(r, v))
                                                 : csp::select(csp::input(r, v), csp::output(w, p));
                const bool received = send_first ? k == 1 : k == 0;
                if (received && capacity == 0 && v == p) ++self_receives;
            }
            ++done;
        };
        two_parties(where, [&] { party(0); }, [&] { party(1); });
        EXPECT_EQ(self_receives.load(), 0) << "capacity " << capacity;
        EXPECT_EQ(done.load(), 2);
    }
}

// Go's test/chan/doubleselect.go: one sender selects over four channels for
// each value; four forwarders pass what they get to one receiver. Two cases
// of one select must never both fire: every value arrives exactly once.
TEST_P(select_race, go_doubleselect_delivers_each_value_once) {
    constexpr int n = 10000;
    const std::size_t where = GetParam();
    std::array<csp::channel<int>, 4> c;
    csp::channel<int> merged;
    std::vector<int> seen(n, 0);
    auto sender = [&] {
        std::array<csp::writer<int>, 4> w{c[0].writer(), c[1].writer(), c[2].writer(), c[3].writer()};
        for (int i = 0; i < n; ++i)
            csp::select(csp::output(w[0], i), csp::output(w[1], i), csp::output(w[2], i), csp::output(w[3], i));
        for (auto& e : w) e.retire();
    };
    auto forwarders = [&] {
        auto forward = [&](std::size_t k) {
            auto out = merged.writer();
            csp_test::read_until<csp::retired_error>(c[k].reader(), [&](int v) { out.write(v); });
            out.retire();
        };
        if (where == 0) {
            std::vector<std::thread> ts;
            for (std::size_t k = 0; k < 4; ++k) ts.emplace_back(forward, k);
            for (auto& t : ts) t.join();
        } else {
            csp::par_for(4, forward);
        }
    };
    auto receiver = [&] { csp_test::read_until<csp::retired_error>(merged.reader(), [&](int v) { ++seen[v]; }); };
    if (where == 0) {
        csp_test::with_watchdog([&] {
            std::thread a(sender), b(forwarders), r(receiver);
            a.join();
            b.join();
            r.join();
        });
    } else {
        csp_test::run_watched([&] { csp::par(sender, forwarders, receiver); }, {.threads = where});
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), n);
}

// Where the skip sits still matters: in a priority select the guards after it
// are never chosen (occam's PRI ALT); a fair select takes it only when no
// other guard is ready, wherever the rotation starts.
TEST(select_order, a_priority_select_never_chooses_a_guard_after_its_skip) {
    csp::channel<int> empty{csp::buffer::fifo(1)}, full{csp::buffer::fifo(1)};
    csp::run([&] {
        full.writer().write(5);
        int v = 0;
        EXPECT_EQ(csp::select(csp::input(empty.reader(), v), csp::skip(), csp::input(full.reader(), v)), 1u);
        EXPECT_EQ(csp::select(csp::input(empty.reader(), v), csp::input(full.reader(), v), csp::skip()), 1u);
        EXPECT_EQ(v, 5);
    });
}

TEST(select_order, a_fair_select_takes_skip_only_when_no_channel_is_ready) {
    csp::channel<int> a{csp::buffer::fifo(1)}, b{csp::buffer::fifo(1)};
    csp::run([&] {
        auto wa = a.writer(), wb = b.writer();
        auto ra = a.reader(), rb = b.reader();
        csp::alternation alt;
        int v = 0, skips = 0, taken = 0;
        for (int i = 0; i < 300; ++i) {
            if (i % 3 == 0) wa.write(i);
            if (i % 5 == 0) wb.write(i);
            const bool any_ready = a.buffered() + b.buffered() > 0;
            const std::size_t k = alt.fair_select(csp::input(ra, v), csp::skip(), csp::input(rb, v));
            if (k == 1) {
                ++skips;
                EXPECT_FALSE(any_ready) << "round " << i;
            } else {
                ++taken;
            }
        }
        EXPECT_EQ(taken, 100 + 60);  // every value written was read: none skipped over
        EXPECT_EQ(skips, 300 - taken);
    });
}

}  // namespace
