#include <array>
#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "helpers.hpp"

using namespace std::chrono_literals;

namespace {

class alt_test : public csp_test::on_threads {};
CSP_ON_1_2_AND_4_THREADS(alt_test);

TEST(alt, priority_select_picks_the_first_ready_guard_in_order) {
    csp::channel<int> a{csp::buffer::fifo(1)}, b{csp::buffer::fifo(1)}, c{csp::buffer::fifo(1)};
    csp::run([&] {
        b.writer().write(2);
        c.writer().write(3);
        int v = 0;
        auto ra = a.reader(), rb = b.reader(), rc = c.reader();
        EXPECT_EQ(csp::select(csp::input(ra, v), csp::input(rb, v), csp::input(rc, v)), 1u);
        EXPECT_EQ(v, 2);
        EXPECT_EQ(csp::select(csp::input(ra, v), csp::input(rb, v), csp::input(rc, v)), 2u);
        EXPECT_EQ(v, 3);
        EXPECT_EQ(c.buffered() + b.buffered(), 0u);  // each select took exactly one value
    });
}

TEST(alt, fair_select_serves_always_ready_guards_in_turn) {
    constexpr int guards = 4, selects = 10000;
    std::array<csp::channel<int>, guards> chans;
    std::array<int, guards> count{};
    csp::run([&] {
        std::vector<csp::channel<int>> stop;
        csp::par(
            [&] {
                csp::par_for(guards, [&](std::size_t i) {
                    auto w = chans[i].writer();
                    try {
                        for (;;) w.write(static_cast<int>(i));
                    } catch (const csp::poisoned_error&) {
                    }
                });
            },
            [&] {
                std::array<csp::reader<int>, guards> rs;
                for (int i = 0; i < guards; ++i) rs[i] = chans[i].reader();
                csp::alternation alt;
                int v = 0;
                for (int k = 0; k < selects; ++k) {
                    const auto i = alt.fair_select(csp::input(rs[0], v), csp::input(rs[1], v),
                                                   csp::input(rs[2], v), csp::input(rs[3], v));
                    ASSERT_EQ(v, static_cast<int>(i));
                    ++count[i];
                }
                for (auto& c : chans) c.poison();
            });
    });
    int total = 0;
    for (int i = 0; i < guards; ++i) {
        EXPECT_NEAR(count[i], selects / guards, selects / guards / 10) << "guard " << i;
        total += count[i];
    }
    EXPECT_EQ(total, selects);
}

// Regression: fair_select took the starting guard modulo the list's size,
// dividing by zero on an empty list.
TEST(alt, fair_select_on_an_empty_list_is_a_usage_error_not_a_division_by_zero) {
    csp::run([] {
        csp::alternation alt;
        std::vector<csp::guard*> none;
        try {
            alt.fair_select(std::span<csp::guard* const>(none));
            ADD_FAILURE() << "an empty select returned";
        } catch (const csp::usage_error& e) {
            EXPECT_NE(std::string(e.what()).find("no guards"), std::string::npos) << e.what();
        }
        EXPECT_THROW(csp::select(std::span<csp::guard* const>(none)), csp::usage_error);
    });
}

TEST(alt, an_output_guard_that_did_not_commit_keeps_its_value) {
    csp::channel<std::unique_ptr<int>> out{"out"};
    csp::channel<int> in{"in", csp::buffer::fifo(1)};
    csp::run([&] {
        in.writer().write(1);
        auto value = std::make_unique<int>(99);
        int got = 0;
        auto w = out.writer();
        auto r = in.reader();
        // Nobody reads `out`: the input commits, and the value stays ours.
        EXPECT_EQ(csp::select(csp::output(w, value), csp::input(r, got)), 1u);
        ASSERT_NE(value, nullptr);
        EXPECT_EQ(*value, 99);
        // Now a reader takes it: the value leaves only on commit.
        csp::par([&] { EXPECT_EQ(csp::select(csp::output(w, value)), 0u); },
                 [&, rr = out.reader()] { EXPECT_EQ(*rr.read(), 99); });
        EXPECT_EQ(value, nullptr);
    });
}

TEST(alt, a_timeout_fires_when_nothing_else_is_ready) {
    csp::channel<int> c;
    csp::run([&] {
        int v = 0;
        auto r = c.reader();
        const auto start = csp::clock::now();
        EXPECT_EQ(csp::select(csp::input(r, v), csp::timeout(30ms)), 1u);
        EXPECT_GE(csp::clock::now() - start, 30ms);
    });
}

TEST(alt, the_earliest_of_two_timeouts_wins) {
    csp::run([&] {
        EXPECT_EQ(csp::select(csp::timeout(200ms), csp::timeout(10ms)), 1u);
    });
}

TEST(alt, a_channel_beats_a_timeout_that_has_not_expired) {
    csp::channel<int> c;
    csp::run([&] {
        csp::par(
            [w = c.writer()] {
                csp::sleep_for(10ms);
                w.write(5);
            },
            [&, r = c.reader()] {
                int v = 0;
                EXPECT_EQ(csp::select(csp::input(r, v), csp::timeout(5s)), 0u);
                EXPECT_EQ(v, 5);
            });
    });
}

// Regression: a timeout of the largest duration (a "forever" written as
// nanoseconds::max()) overflowed into the past when added to the clock, so
// the select timed out at once instead of waiting for the channel.
TEST_P(alt_test, a_timeout_of_the_largest_duration_waits_for_the_channel) {
    csp::channel<int> c;
    std::vector<int> got;
    csp::run([&] {
        const auto wait_for_it = [&](auto timeout) {
            csp::par([w = c.writer()] { csp::sleep_for(20ms), w.write(1); },
                     [&, r = c.reader()] {
                         int v = 0;
                         if (csp::select(csp::input(r, v), timeout) == 0) got.push_back(v);
                     });
        };
        wait_for_it(csp::timeout(std::chrono::nanoseconds::max()));
        wait_for_it(csp::timeout(std::chrono::milliseconds::max()));
        wait_for_it(csp::timeout(std::chrono::hours::max()));
        wait_for_it(csp::timeout(std::chrono::duration<double>(1e300)));
        wait_for_it(csp::deadline(csp::clock::time_point::max()));
    }, opts());
    EXPECT_EQ(got, (std::vector<int>{1, 1, 1, 1, 1}));
}

TEST_P(alt_test, a_timeout_or_sleep_of_the_most_negative_duration_is_due_at_once) {
    csp::channel<int> c;
    csp::run([&] {
        const auto start = csp::clock::now();
        int v = 0;
        EXPECT_EQ(csp::select(csp::input(c.reader(), v), csp::timeout(std::chrono::hours::min())), 1u);
        EXPECT_EQ(csp::select(csp::input(c.reader(), v), csp::timeout(std::chrono::nanoseconds::min())), 1u);
        csp::sleep_for(std::chrono::hours::min());
        csp::sleep_for(std::chrono::nanoseconds::min());
        csp::sleep_until(csp::clock::time_point::min());
        EXPECT_LT(csp::clock::now() - start, 5s);
    }, opts());
}

TEST(deadline_after, saturates_at_both_ends_of_the_clock) {
    const auto max = csp::clock::time_point::max();
    EXPECT_EQ(csp::deadline_after(std::chrono::nanoseconds::max()), max);
    EXPECT_EQ(csp::deadline_after(std::chrono::hours::max()), max);
    EXPECT_EQ(csp::deadline_after(std::chrono::duration<double>(1e300)), max);
    const auto before = csp::clock::now();
    const auto due = csp::deadline_after(std::chrono::hours::min());
    EXPECT_LE(due, csp::clock::now());
    EXPECT_GE(due, before);
    const auto in_a_second = csp::deadline_after(1s);
    EXPECT_GE(in_a_second, before + 1s);
    EXPECT_LE(in_a_second, csp::clock::now() + 1s);
    // From a given point; the clock's end stays the end.
    EXPECT_EQ(csp::deadline_after(before, 2s), before + 2s);
    EXPECT_EQ(csp::deadline_after(max, 1s), max);
    EXPECT_EQ(csp::deadline_after(before, -1s), before);
    // Rounded up: a wait is never shorter than asked.
    EXPECT_GE(csp::deadline_after(std::chrono::duration<double, std::nano>(0.5)), before + 1ns);
}

TEST(alt, skip_makes_select_non_blocking) {
    csp::channel<int> c{csp::buffer::fifo(1)};
    csp::run([&] {
        int v = 0;
        auto r = c.reader();
        EXPECT_EQ(csp::select(csp::input(r, v), csp::skip()), 1u);
        c.writer().write(4);
        EXPECT_EQ(csp::select(csp::input(r, v), csp::skip()), 0u);
        EXPECT_EQ(v, 4);
    });
}

TEST(alt, a_false_precondition_disables_its_guard) {
    csp::channel<int> a{csp::buffer::fifo(1)}, b{csp::buffer::fifo(1)};
    csp::run([&] {
        a.writer().write(1);
        b.writer().write(2);
        int v = 0;
        auto ra = a.reader(), rb = b.reader();
        EXPECT_EQ(csp::select(csp::input(ra, v).when(false), csp::input(rb, v)), 1u);
        EXPECT_EQ(v, 2);
        EXPECT_EQ(a.buffered(), 1u);
        EXPECT_THROW(csp::select(csp::input(ra, v).when(false)), csp::usage_error);
    });
}

TEST(alt, a_poisoned_channel_makes_select_throw) {
    csp::channel<int> a{"a"}, b{"b"};
    csp::run([&] {
        csp::par(
            [&, ra = a.reader(), rb = b.reader()] {
                int v = 0;
                EXPECT_THROW(csp::select(csp::input(ra, v), csp::input(rb, v)), csp::poisoned_error);
            },
            [&] {
                csp::sleep_for(5ms);
                b.poison();
            });
    });
}

TEST(alt, select_over_input_and_output_of_the_same_channel_does_not_match_itself) {
    csp::channel<int> c;
    csp::run([&] {
        int v = 0;
        auto r = c.reader();
        auto w = c.writer();
        EXPECT_EQ(csp::select(csp::input(r, v), csp::output(w, 3), csp::timeout(10ms)), 2u);
    });
}

// Two alternations meet on a channel: one offers output, the other input.
TEST_P(alt_test, two_alternations_complete_a_rendezvous) {
    constexpr int n = 2000;
    csp::channel<int> c, idle_in, idle_out;  // the idle guards never find a partner
    long sum = 0;
    csp::run(
        [&] {
            csp::par(
                [&, w = c.writer(), x = idle_in.reader()] {
                    int dummy = 0;
                    for (int i = 1; i <= n; ++i)
                        ASSERT_EQ(csp::select(csp::input(x, dummy), csp::output(w, i)), 1u);
                },
                [&, r = c.reader(), y = idle_out.writer()] {
                    int v = 0;
                    for (int i = 1; i <= n; ++i) {
                        ASSERT_EQ(csp::select(csp::output(y, 0), csp::input(r, v)), 1u);
                        sum += v;
                    }
                });
        },
        opts());
    EXPECT_EQ(sum, static_cast<long>(n) * (n + 1) / 2);
}

// Competing readers alternate over a shared channel and a private one: every
// value of the shared channel goes to exactly one of them.
TEST_P(alt_test, alternations_on_a_shared_channel_with_competing_readers) {
    constexpr int readers = 4, n = 4000;
    csp::channel<int> shared{"shared", csp::sharing::one_to_any};
    std::vector<csp::channel<int>> privates(readers);
    std::vector<std::atomic<int>> seen(n);
    std::atomic<int> total{0}, private_hits{0};
    csp::run(
        [&] {
            csp::par(
                [&, w = shared.writer()] {
                    for (int i = 0; i < n; ++i) w.write(i);
                    for (auto& p : privates) p.writer().write(-1);  // stop each reader
                },
                [&] {
                    csp::par_for(readers, [&](std::size_t k) {
                        auto rs = shared.reader();
                        auto rp = privates[k].reader();
                        for (;;) {
                            int v = 0;
                            if (csp::select(csp::input(rp, v), csp::input(rs, v)) == 0) {
                                ++private_hits;
                                return;
                            }
                            ++seen[v];
                            ++total;
                        }
                    });
                });
        },
        opts());
    EXPECT_EQ(total.load(), n);
    EXPECT_EQ(private_hits.load(), readers);
    for (int i = 0; i < n; ++i) ASSERT_EQ(seen[i].load(), 1) << i;
}

TEST(alt, replicated_select_over_a_runtime_list) {
    constexpr std::size_t n = 12;  // more than the small-alt fast path holds
    std::vector<csp::channel<int>> chans;
    for (std::size_t i = 0; i < n; ++i) chans.emplace_back(csp::buffer::fifo(1));
    csp::run([&] {
        chans[9].writer().write(9);
        std::vector<csp::reader<int>> rs;
        for (auto& c : chans) rs.push_back(c.reader());
        int v = -1;
        std::vector<csp::input_guard<int>> guards;
        for (auto& r : rs) guards.emplace_back(r, v);
        std::vector<csp::guard*> gs;
        for (auto& g : guards) gs.push_back(&g);
        EXPECT_EQ(csp::select(gs), 9u);
        EXPECT_EQ(v, 9);
    });
}

// A guard whose enable hands its node to a plain thread, which commits and
// wakes it at once: the alternation is committed while it is still enabling.
class committed_from_outside final : public csp::guard_base<committed_from_outside> {
public:
    explicit committed_from_outside(std::atomic<bool>& committed) : committed_(committed) {}
    bool try_complete() override { return false; }
    bool enable(csp::wait_node& node) override {
        partner_ = std::thread([&node, &c = committed_] {
            if (node.commit()) {
                c.store(true);
                node.owner->wake();
            }
        });
        return false;
    }
    void disable(csp::wait_node&) override {
        if (partner_.joinable()) partner_.join();
    }
    void complete(csp::wait_node&) override {}
    void describe(std::string& out) const override { out += "committed from outside"; }
    bool reachable_from_outside() const override { return true; }

private:
    std::atomic<bool>& committed_;
    std::thread partner_;
};

// A guard whose enable fails once the guard before it was committed.
class fails_after_commit final : public csp::guard_base<fails_after_commit> {
public:
    explicit fails_after_commit(std::atomic<bool>& committed) : committed_(committed) {}
    bool try_complete() override { return false; }
    bool enable(csp::wait_node&) override {
        while (!committed_.load()) std::this_thread::yield();  // a thread yield: the process stays put
        throw std::runtime_error("enable failed");
    }
    void disable(csp::wait_node&) override {}
    void complete(csp::wait_node&) override {}
    void describe(std::string& out) const override { out += "fails after a commit"; }

private:
    std::atomic<bool>& committed_;
};

// Regression: when a guard's enable threw after another guard had been
// committed, the alternation absorbed the partner's wake inside its catch
// handler and then rethrew with `throw;`. On several workers the wake could
// resume the process on another thread, whose C++ runtime had no exception
// being handled: std::terminate ("terminate called without an active
// exception"). The error must reach the caller on any worker.
TEST_P(alt_test, a_guard_failing_to_enable_after_a_commit_throws_its_error_on_any_worker) {
    int caught = 0;
    csp_test::run_watched(
        [&] {
            for (int round = 0; round < 200; ++round) {
                std::atomic<bool> committed{false};
                committed_from_outside first(committed);
                fails_after_commit second(committed);
                try {
                    csp::select(first, second);
                } catch (const std::runtime_error& e) {
                    if (std::string(e.what()) == "enable failed") ++caught;
                }
            }
        },
        opts());
    EXPECT_EQ(caught, 200);
}

}  // namespace
