// Process priorities: the order in which ready processes run, on one thread
// and on several; never what they compute.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

#include "csp/detail/fiber_internals.hpp"
#include "csp/detail/scheduler_policy.hpp"
#include "helpers.hpp"

namespace {

using namespace std::chrono_literals;

// The calling thread, read afresh: a fiber may move between threads, and
// the compiler may otherwise reuse an earlier answer.
__attribute__((noinline, noipa)) std::thread::id current_thread() { return std::this_thread::get_id(); }

void spin_for(std::chrono::microseconds d) {
    const auto until = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < until) {
    }
}

// How often the host has taken a CPU from a thread of this process so far.
long involuntary_switches() {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    return u.ru_nivcsw;
}

// Two processes of a two-thread runtime that make sure they run on
// different workers: hold() keeps its worker busy, without yielding (a yield
// lets a worker look for work elsewhere), from the moment the other process
// has seen it on the other worker until `release` is set; apart() returns,
// on the other worker, once the holder holds. Nothing of apart()'s worker is
// stolen meanwhile.
struct worker_holder {
    std::atomic<std::thread::id> holder_thread{};
    std::atomic<bool> seen_apart{false}, holding{false};

    void hold(const std::atomic<bool>& release) {
        while (!seen_apart.load()) {
            holder_thread.store(current_thread());
            csp::yield();
        }
        holding = true;
        while (!release.load()) {
        }
    }
    void apart() {
        for (;;) {
            const std::thread::id other = holder_thread.load();
            if (other != std::thread::id{} && other != current_thread()) break;
            csp::yield();
        }
        // Only this worker could take the holder away, and it is busy here
        // until the holder holds.
        seen_apart = true;
        while (!holding.load()) {
        }
    }
};

// Runs f(done) in a process of a two-thread runtime while another process
// holds the other worker (it spins without yielding, so nothing is stolen)
// until f has set `done`: whatever f starts shares f's worker.
template <class F>
void on_one_worker_of_two(F&& f) {
    worker_holder holder;
    std::atomic<bool> done{false};
    csp_test::run_watched(
        [&] {
            csp::par([&] { holder.hold(done); },
                     [&] {
                         holder.apart();
                         f(done);
                     });
        },
        {.threads = 2});
}

// Processes with the given priorities block on their own channel; once all
// are blocked, one releaser wakes them in index order without blocking
// itself. Returns the order in which they then ran.
//
// With `threads` > 1, the releaser and a second process (the holder) first
// make sure they run on different workers and then keep both busy, without
// yielding, until the release is complete (a yield lets the yielding worker
// look for work elsewhere); then the releaser's worker stays busy and the
// other worker takes every released process from its queue.
std::vector<int> release_order(const std::vector<int>& priorities, std::size_t threads) {
    const std::size_t n = priorities.size();
    std::vector<csp::channel<int>> go(n);
    std::mutex m;
    std::vector<int> order;
    worker_holder holder;
    std::atomic<bool> released{false};
    csp_test::run_watched(
        [&] {
            csp::par(
                [&] {
                    csp::par_for(n, [&](std::size_t i) {
                        csp::this_process::set_priority(priorities[i]);
                        go[i].reader().read();
                        std::lock_guard lk(m);
                        order.push_back(static_cast<int>(i));
                    });
                },
                [&] {
                    csp::sleep_for(20ms);  // every reader is blocked by now
                    if (threads > 1) holder.apart();
                    for (auto& c : go) c.writer().write(0);
                    released = true;
                    if (threads > 1) spin_for(200ms);
                },
                [&] {
                    if (threads == 1) return;
                    holder.hold(released);  // until the release is complete
                    spin_for(1ms);
                });
        },
        {.threads = threads});
    return order;
}

TEST(priority, one_thread_runs_the_highest_ready_priority_first_and_equals_in_fifo_order) {
    // Released in index order; 1 and 3 share the top level, 1 was first.
    // The one released last sits in the run-next slot: it goes first among
    // equals (the releaser's next pick), and after every higher level.
    EXPECT_EQ(release_order({2, 6, 4, 6, 0}, 1), (std::vector<int>{1, 3, 2, 0, 4}));
    EXPECT_EQ(release_order({4, 4, 4, 4}, 1), (std::vector<int>{3, 0, 1, 2}));
    EXPECT_EQ(release_order({4, 4, 4, 1}, 1), (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(release_order({0, 1, 2, 3, 4, 5, 6, 7}, 1), (std::vector<int>{7, 6, 5, 4, 3, 2, 1, 0}));
}

// The releaser's worker is busy for 200 ms after the release, so the other
// worker takes every released process from its queue: highest priority
// first, equals oldest first. The last one released sits in the releaser's
// run-next slot, which a thief takes last; it has the lowest priority here,
// so the whole order is by priority.
TEST(priority, a_thief_takes_the_highest_priority_first) {
    const auto order = release_order({3, 6, 1, 6, 5, 0}, 2);
    EXPECT_EQ(order, (std::vector<int>{1, 3, 4, 0, 2, 5}));
}

// Regression for the rule a thief once broke: it took the run-next process
// while the owner's queue still held processes it judged too young to steal
// (its record of that queue had just been reset). The run-next process is
// taken last even when it has the highest priority: its owner will usually
// run it next. (The original interleaving needs the thief to look in the
// middle of a release; this checks the rule where it is easy to see.)
TEST(priority, a_thief_takes_the_run_next_process_only_once_the_owners_queue_is_empty) {
    EXPECT_EQ(release_order({3, 1, 7}, 2), (std::vector<int>{0, 1, 2}));
}

TEST(priority, results_do_not_depend_on_priorities) {
    // A pipeline whose stages have mixed priorities computes what it does
    // without them, on one and on two threads.
    for (std::size_t threads : {1u, 2u}) {
        for (int variant = 0; variant < 3; ++variant) {
            csp::channel<long> a, b;
            long sum = 0;
            csp_test::run_watched(
                [&] {
                    csp::par(
                        [&, out = a.writer()] {
                            csp::this_process::set_priority(variant == 0 ? csp::priority_high : csp::priority_low);
                            for (long i = 1; i <= 1000; ++i) out.write(i);
                            out.retire();
                        },
                        [&, in = a.reader(), out = b.writer()] {
                            csp::this_process::set_priority(variant == 1 ? csp::priority_highest
                                                                         : csp::priority_normal);
                            csp_test::read_until<csp::retired_error>(in, [&](long v) { out.write(v * v); });
                            out.retire();
                        },
                        [&, in = b.reader()] {
                            csp::this_process::set_priority(variant == 2 ? csp::priority_lowest : csp::priority_high);
                            csp_test::read_until<csp::retired_error>(in, [&](long v) { sum += v; });
                        });
                },
                {.threads = threads});
            EXPECT_EQ(sum, 1000L * 1001 * 2001 / 6) << "threads " << threads << " variant " << variant;
        }
    }
}

TEST(priority, pri_par_gives_its_branches_descending_priorities_from_the_callers) {
    std::vector<int> seen(4, -1);
    int after = -1;
    csp::run([&] {
        csp::this_process::set_priority(csp::priority_high);
        csp::pri_par([&] { seen[0] = csp::this_process::get_priority(); },
                     [&] { seen[1] = csp::this_process::get_priority(); },
                     [&] {
                         seen[2] = csp::this_process::get_priority();
                         csp::par([&] { seen[3] = csp::this_process::get_priority(); });  // inherits
                     });
        after = csp::this_process::get_priority();
    });
    EXPECT_EQ(seen, (std::vector<int>{csp::priority_high, csp::priority_high - 1, csp::priority_high - 2,
                                      csp::priority_high - 2}));
    EXPECT_EQ(after, csp::priority_high);
}

TEST(priority, pri_par_runs_its_first_branch_first_and_stops_at_the_lowest_level) {
    std::vector<int> order, levels;
    csp::run([&] {
        csp::this_process::set_priority(csp::priority_lowest + 1);
        csp::pri_par([&] { order.push_back(0), levels.push_back(csp::this_process::get_priority()); },
                     [&] { order.push_back(1), levels.push_back(csp::this_process::get_priority()); },
                     [&] { order.push_back(2), levels.push_back(csp::this_process::get_priority()); });
    });
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(levels, (std::vector<int>{1, 0, 0}));
}

TEST(priority, the_root_starts_at_normal_and_a_bad_level_is_refused_by_name) {
    csp::run([] {
        EXPECT_EQ(csp::this_process::get_priority(), csp::priority_normal);
        try {
            csp::this_process::set_priority(csp::priority_highest + 1);
            ADD_FAILURE() << "no error";
        } catch (const csp::usage_error& e) {
            EXPECT_NE(std::string(e.what()).find("priority 8 is outside [0, 7]"), std::string::npos) << e.what();
        }
        EXPECT_THROW(csp::this_process::set_priority(-1), csp::usage_error);
        EXPECT_EQ(csp::this_process::get_priority(), csp::priority_normal);
    });
    EXPECT_THROW(csp::this_process::set_priority(csp::priority_high), csp::usage_error);  // not a process
}

}  // namespace

// Regression: on one thread a process woken by a channel operation went to
// the back of the ready queue, so a reader waited for every busy process of
// its priority to take a turn (csp_bench priority_latency/busy_equal: 492 us
// behind 100 processes computing in 5 us slices, against 0.2 us on two
// threads and 0.27 us in Go). It now runs at its waker's next yield.
TEST(run_next, an_equal_priority_reader_waited_behind_every_busy_process_on_one_thread) {
    constexpr int busy = 20, samples = 50;
    std::atomic<int> turns{0};  // turns of busy processes, the writer's included
    std::vector<int> turns_between;  // from each write to its read
    csp::channel<int> stamps;
    std::atomic<bool> stop{false};
    csp_test::run_watched([&] {
        csp::par(
            [&, in = stamps.reader()] {
                for (int i = 0; i < samples; ++i) {
                    const int at_write = in.read();
                    turns_between.push_back(turns.load() - at_write);
                }
                stop = true;
            },
            [&] {
                csp::par_for(busy, [&](std::size_t k) {
                    auto out = stamps.writer();
                    for (int round = 0; !stop; ++round) {
                        ++turns;
                        if (k == 0 && round % 4 == 0 && !stop) out.write(turns.load());
                        csp::yield();
                    }
                });
            });
    });
    ASSERT_EQ(turns_between.size(), static_cast<std::size_t>(samples));
    for (const int t : turns_between) EXPECT_EQ(t, 0);  // nobody ran between the write and the read
}

namespace {

// Runs 2,000 round trips of a ping-pong beside a third process of the same
// priority that yields in a loop, all started on the caller's worker;
// returns the ping-pong's count of round trips at each of the third's turns.
// `done` is set when the ping-pong ends.
std::vector<int> round_trips_at_an_equals_turns(std::atomic<bool>& done) {
    constexpr int rounds = 2000;
    std::atomic<int> exchanged{0};
    std::vector<int> at_turn;
    csp::channel<int> ping, pong;
    csp::par(
        [&, out = ping.writer(), in = pong.reader()] {
            for (int i = 0; i < rounds; ++i) {
                out.write(i);
                in.read();
                ++exchanged;
            }
            done = true;
        },
        [&, in = ping.reader(), out = pong.writer()] {
            for (int i = 0; i < rounds; ++i) out.write(in.read());
        },
        [&] {
            while (!done) {
                at_turn.push_back(exchanged.load());
                csp::yield();
            }
        });
    return at_turn;
}

// Between two turns of the third process the pair made at most 16 picks of
// the slot: 8 round trips, and a few more as the slot is taken at once after
// a queued pick.
void expect_a_turn_every_few_round_trips(const std::vector<int>& at_turn) {
    ASSERT_GE(at_turn.size(), 2u);
    for (std::size_t i = 1; i < at_turn.size(); ++i) EXPECT_LE(at_turn[i] - at_turn[i - 1], 10) << "turn " << i;
    EXPECT_GE(at_turn.size(), 200u);
}

}  // namespace

// A ping-pong of two processes keeps the run-next slot busy; a third
// process of the same priority still gets a turn at least once per
// tuning::run_next_streak (16) picks of the slot, on one thread.
TEST(run_next, a_ping_pong_does_not_starve_an_equal_priority_process_on_one_thread) {
    std::atomic<bool> done{false};
    std::vector<int> at_turn;
    csp_test::run_watched([&] { at_turn = round_trips_at_an_equals_turns(done); });
    expect_a_turn_every_few_round_trips(at_turn);
}

// The same on a worker of a multi-thread runtime, whose slot is taken by
// another path (worker_policy::take_local): once the streak ran out the
// queued equal runs, and then the slot's process, before the queue's next.
// A second process holds the other worker (it spins without yielding, so
// nothing is stolen) while the three share this one.
TEST(run_next, a_ping_pong_does_not_starve_an_equal_priority_process_on_two_threads) {
    std::vector<int> at_turn;
    on_one_worker_of_two([&](std::atomic<bool>& done) { at_turn = round_trips_at_an_equals_turns(done); });
    expect_a_turn_every_few_round_trips(at_turn);
}

// A process in the run-next slot goes after a queued process of a higher
// priority, streak or not: W wakes H (priority_high) and then R (normal),
// which displaces H from the slot into the queue; H runs first.
TEST(run_next, a_woken_process_waits_behind_a_higher_priority_queued_one_on_one_thread) {
    std::vector<char> order;
    csp::channel<int> to_h, to_r;
    csp_test::run_watched([&] {
        csp::par(
            [&, in = to_h.reader()] {
                csp::this_process::set_priority(csp::priority_high);
                in.read();
                order.push_back('H');
            },
            [&, in = to_r.reader()] {
                in.read();
                order.push_back('R');
            },
            [&, h = to_h.writer(), r = to_r.writer()] {
                csp::sleep_for(10ms);  // both readers are blocked by now
                h.write(0);
                r.write(0);
                order.push_back('W');
            });
    });
    EXPECT_EQ(order, (std::vector<char>{'W', 'H', 'R'}));
}

namespace {

// Runs 2,000 round trips of a ping-pong at priority_high beside a process at
// the caller's priority (normal) that yields in a loop, all started on the
// caller's worker; returns the turns that process took while the ping-pong
// ran. `done` is set when the ping-pong ends.
int low_turns_beside_a_high_ping_pong(std::atomic<bool>& done) {
    constexpr int rounds = 2000;
    int low_turns = 0;
    csp::channel<int> ping, pong;
    csp::par(
        [&, out = ping.writer(), in = pong.reader()] {
            csp::this_process::set_priority(csp::priority_high);
            csp::yield();  // the others start and block or queue
            for (int i = 0; i < rounds; ++i) {
                out.write(i);
                in.read();
            }
            done = true;
        },
        [&, in = ping.reader(), out = pong.writer()] {
            csp::this_process::set_priority(csp::priority_high);
            for (int i = 0; i < rounds; ++i) out.write(in.read());
        },
        [&] {
            csp::yield();
            while (!done) {
                ++low_turns;
                csp::yield();
            }
        });
    return low_turns;
}

}  // namespace

// A ping-pong at priority_high is not interrupted by a process at normal
// priority on one thread: the run-next slot goes before a lower level
// however long its streak.
TEST(run_next, a_higher_priority_ping_pong_keeps_the_thread_from_a_lower_process) {
    std::atomic<bool> done{false};
    int low_turns_during = -1;
    csp_test::run_watched([&] { low_turns_during = low_turns_beside_a_high_ping_pong(done); });
    EXPECT_EQ(low_turns_during, 0);
}


// Regression: a worker of a multi-thread runtime took its run-next slot only
// while its streak lasted (16 picks in a row), and then ran a queued process
// of a lower priority before it. A priority_high ping-pong and a normal
// process share one worker while a second process holds the other worker
// (it spins without yielding, so nothing is stolen); the normal process must
// not run until the ping-pong ends.
TEST(run_next, a_lower_priority_process_ran_when_the_run_next_streak_ran_out_on_two_threads) {
    int low_turns_during = -1;
    on_one_worker_of_two([&](std::atomic<bool>& done) { low_turns_during = low_turns_beside_a_high_ping_pong(done); });
    EXPECT_EQ(low_turns_during, 0);
}

// Regression for a producer and a consumer that both compute (1,000 items of
// 50 us each way: the same time on two threads as on one; Go 1.15x). The
// consumer, woken by the producer's write, waited in the run-next slot of
// the producer's worker until the producer blocked at its next write: the
// idle worker, asleep since nobody held work, did not hear of the slot, and
// while it spun it looked at queues only. A filled slot now wakes an eager
// sleeper, and a looking worker takes the slot's process once its owner has
// run one process for tuning::run_next_steal_delay. Here the producer lets
// the other worker go to sleep (2 ms, past any spin) before each write, then
// runs on, without a switch, until the consumer has taken the item: on the
// other worker, or not at all.
TEST(run_next, a_process_woken_by_one_that_runs_on_is_taken_by_a_sleeping_worker) {
    constexpr int rounds = 20;
    int taken = 0;
    csp_test::run_watched(
        [&] {
            csp::channel<int> items;
            std::atomic<int> received{-1};
            csp::par(
                [&, out = items.writer()] {
                    auto patience = 2s;  // for the first round that fails; then none
                    for (int r = 0; r < rounds; ++r) {
                        spin_for(2ms);
                        out.write(r);
                        const auto until = std::chrono::steady_clock::now() + patience;
                        while (received.load() != r && std::chrono::steady_clock::now() < until) {
                        }
                        if (received.load() == r) ++taken;
                        else patience = 0s;
                    }
                },
                [&, in = items.reader()] {
                    for (int r = 0; r < rounds; ++r) received.store(in.read());
                });
        },
        {.threads = 2});
    EXPECT_EQ(taken, rounds);
}

// Regression for two stages of a fine-grained pipeline changing workers at
// every item (10 us a stage on two threads: 16.5-17 us an item, where one
// worker takes 20 and two could take 10): the consumer, woken by the
// producer's write, waited in the producer's worker's run-next slot for
// tuning::run_next_steal_delay, was taken by the idle worker, ran there
// beside the producer, and went back to the slot at the next write. A
// process that another worker took from its waker's worker now goes back to
// the worker it ran on (if idle) at its next wake-up. Here the producer
// computes three times as long as the consumer, without yielding: after the
// consumer's first move, no item should wait in a run-next slot for a thief.
TEST(run_next, a_process_that_ran_beside_its_waker_goes_back_to_its_worker) {
    constexpr int items = 30;
    // One round: the steals from run-next slots after the consumer's first
    // move, and the host's preemptions of this process meanwhile.
    struct round {
        std::uint64_t steals;
        long preempted;
    };
    const auto measure = [&] {
        std::uint64_t steals_before = 0, steals_after = 0;
        long preempted_before = 0, preempted_after = 0;
        int consumed = 0;
        csp_test::run_watched(
            [&] {
                const auto* pool =
                    csp::detail::fiber::record_of(boost::fibers::context::active())->runtime()->workers();
                csp::channel<int> link;
                csp::par(
                    [&, out = link.writer()] {
                        spin_for(1ms);
                        out.write(0);  // the consumer's first move
                        spin_for(1ms);
                        steals_before = pool->run_next_steals();
                        preempted_before = involuntary_switches();
                        for (int i = 1; i < items; ++i) {
                            spin_for(300us);
                            out.write(i);
                        }
                        spin_for(1ms);  // until the consumer has taken the last
                        steals_after = pool->run_next_steals();
                        preempted_after = involuntary_switches();
                    },
                    [&, in = link.reader()] {
                        for (int i = 0; i < items; ++i) {
                            EXPECT_EQ(in.read(), i);
                            spin_for(100us);
                            ++consumed;
                        }
                    });
            },
            {.threads = 2});
        EXPECT_EQ(consumed, items);
        return round{steals_after - steals_before, preempted_after - preempted_before};
    };
    // On the build before, every item waited in the slot for a thief, in
    // every round. Now an item waits there only when the host took a
    // worker's CPU at the wrong moment (the consumer still running when the
    // producer wrote, the roles swap for that item), which a loaded host
    // (the sanitizer build beside another test) does now and then: a round
    // with at most items/5 steals shows the behaviour, and three rounds
    // without one are the regression, not chance.
    std::vector<round> rounds;
    for (int attempt = 0; attempt < 3; ++attempt) {
        rounds.push_back(measure());
        if (rounds.back().steals <= static_cast<std::uint64_t>(items / 5)) return;
    }
    std::string seen;
    for (const round& r : rounds)
        seen += " " + std::to_string(r.steals) + " (host preemptions " + std::to_string(r.preempted) + ")";
    ADD_FAILURE() << "items the consumer took from the producer's run-next slot, by round:" << seen;
}
