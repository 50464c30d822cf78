// Task graphs over ranks as processes of one runtime (local communicator),
// on one or two worker threads: results against sequential references,
// dependence order under random delays, every value counted, priorities,
// failures on every rank, and refused graphs.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/collectives.hpp"
#include "csp/runtime.hpp"
#include "csp/timer.hpp"
#include "dataflow/dataflow.hpp"
#include "test/dataflow/stencil.hpp"

namespace cc = csp::collectives;
namespace df = csp::dataflow;

using dataflow_test::stencil;
using dataflow_test::stencil_reference;
using dataflow_test::stencil_value;

namespace {

// Values sent on every edge of the stencil in `steps` steps; those of
// lag-1 outputs of the last step have no consumer and are not sent.
std::uint64_t stencil_edges(df::task_id n) { return static_cast<std::uint64_t>(n + 2 * (n - 1)); }

// Runs `g` for `steps` on `ranks` ranks as fibers of one runtime of
// `threads` threads, `workers` workers each; returns the ranks' stats folded.
df::run_stats run_on_ranks(const df::task_graph<std::int64_t>& g, int steps, int ranks, int workers,
                           std::size_t threads) {
    df::run_stats all;
    csp::run(
        [&] {
            auto stats = cc::run_local(ranks, [&](cc::local_communicator& comm) {
                return df::run(comm, g, steps, {.workers = workers});
            });
            for (const auto& s : stats) all += s;
        },
        {.threads = threads});
    return all;
}

struct shape {
    int ranks;
    std::size_t threads;
    int workers;
};

// How ctest's listing and gtest show a shape (not its bytes).
void PrintTo(const shape& s, std::ostream* os) {
    *os << s.ranks << (s.ranks == 1 ? " rank on " : " ranks on ") << s.threads
        << (s.threads == 1 ? " thread, " : " threads, ");
    if (s.workers == 0) *os << "a worker per thread";
    else *os << s.workers << (s.workers == 1 ? " worker" : " workers");
}

class stencil_graph : public ::testing::TestWithParam<shape> {};

TEST_P(stencil_graph, matches_the_sequential_reference_and_counts_every_value) {
    const auto [ranks, threads, workers] = GetParam();
    const df::task_id n = 11;
    const int steps = 25;
    auto g = stencil(n, ranks);
    std::vector<std::int64_t> last(n, -1);
    std::mutex lock;
    auto body = g.body;
    g.body = [&](df::task<std::int64_t>& t) {
        body(t);
        if (t.last_step()) {
            const std::int64_t v = stencil_value(t);
            std::lock_guard lk(lock);
            last[t.id()] = v;
        }
    };
    const df::run_stats all = run_on_ranks(g, steps, ranks, workers, threads);
    EXPECT_EQ(last, stencil_reference(n, steps));
    EXPECT_EQ(all.instances, static_cast<std::uint64_t>(n) * steps);
    EXPECT_EQ(all.sent, all.received);
    EXPECT_EQ(all.sent + all.handed, stencil_edges(n) * (steps - 1));
    if (ranks == 1) EXPECT_EQ(all.sent, 0u);
    else EXPECT_EQ(all.sent, 2u * (ranks - 1) * (steps - 1));  // one value each way across each rank boundary
}

INSTANTIATE_TEST_SUITE_P(shapes, stencil_graph,
                         ::testing::Values(shape{1, 1, 0}, shape{2, 1, 0}, shape{4, 1, 0}, shape{1, 2, 0},
                                           shape{2, 2, 0}, shape{4, 2, 0}, shape{4, 2, 3}, shape{3, 1, 2},
                                           shape{1, 2, 4}));

// Four workers on two threads whose bodies yield or sleep between their
// emits at random, so that workers go idle and are woken while others are
// in the middle of a body, over twenty runs: every value is counted and the
// result is the reference's.
TEST(emits, every_value_reaches_its_consumer_when_bodies_yield_between_emits) {
    const df::task_id n = 24;
    const int steps = 40;
    for (int round = 0; round < 20; ++round) {
        auto g = stencil(n, 1);
        std::vector<std::int64_t> last(n, -1);
        std::mutex lock;
        g.body = [&](df::task<std::int64_t>& t) {
            thread_local std::mt19937 rng(std::random_device{}());
            const std::int64_t v = stencil_value(t);
            for (std::size_t o = 0; o < t.edges().outputs.size(); ++o) {
                t.emit(o, std::int64_t{v});
                switch (rng() % 8) {
                    case 0: csp::yield(); break;
                    case 1: csp::sleep_for(std::chrono::microseconds(rng() % 50)); break;
                    default: break;
                }
            }
            if (t.last_step()) {
                std::lock_guard lk(lock);
                last[t.id()] = v;
            }
        };
        df::run_stats st;
        csp::run(
            [&] {
                cc::run_local(1, [&](cc::local_communicator& comm) { st = df::run(comm, g, steps, {.workers = 4}); });
            },
            {.threads = 2});
        ASSERT_EQ(last, stencil_reference(n, steps)) << "round " << round;
        ASSERT_EQ(st.instances, static_cast<std::uint64_t>(n) * steps);
        ASSERT_EQ(st.handed, stencil_edges(n) * (steps - 1));
    }
}

// A graph whose edges cross the workers' shares (engine.hpp: each worker
// serves a contiguous run of the rank's tasks first): task t takes its own
// last value and task q(t)'s (lag 1) and, except at the start of each run of
// four, task t-1's value of the same step (lag 0). Integer values, so the
// result does not depend on which worker ran what.
struct crossing_graph {
    df::task_id n;
    df::task_id q(df::task_id t) const { return (t * 7 + 3) % n; }
    std::vector<df::input> inputs(df::task_id t) const {
        std::vector<df::input> in{{t, 1}};
        if (q(t) != t) in.push_back({q(t), 1});
        if (t % 4 != 0) in.push_back({t - 1, 0});
        return in;
    }
    df::task_edges edges(df::task_id t) const {
        df::task_edges e;
        e.inputs = inputs(t);
        for (df::task_id u = 0; u < n; ++u)
            for (const auto& in : inputs(u))
                if (in.from == t) e.outputs.push_back({u, in.lag});
        return e;
    }
    static std::int64_t value(df::task_id t, int step, const std::vector<std::int64_t>& in) {
        std::int64_t v = t + step;
        for (std::size_t i = 0; i < in.size(); ++i) v += static_cast<std::int64_t>(i + 1) * in[i];
        return v % 1000003;
    }
    // Each task's value at the last of `steps` steps, computed in order.
    std::vector<std::int64_t> reference(int steps) const {
        std::vector<std::int64_t> prev(n), cur(n);
        for (df::task_id t = 0; t < n; ++t) prev[t] = t + 1;
        for (int s = 0; s < steps; ++s) {
            for (df::task_id t = 0; t < n; ++t) {
                std::vector<std::int64_t> in;
                for (const auto& e : inputs(t)) in.push_back(e.lag == 0 ? cur[e.from] : prev[e.from]);
                cur[t] = value(t, s, in);
            }
            std::swap(prev, cur);
        }
        return prev;
    }
    // Values that travel an edge in `steps` steps.
    std::uint64_t values(int steps) const {
        std::uint64_t k = 0;
        for (df::task_id t = 0; t < n; ++t)
            for (const auto& e : inputs(t)) k += static_cast<std::uint64_t>(std::max(0, steps - e.lag));
        return k;
    }
};

// Workers that outnumber the threads, bodies that yield at random between
// emits, values that cross shares and ranks, over many rounds: every value
// is counted, every instance runs once, and the result is the reference's.
TEST(shares, every_value_crossing_the_workers_shares_arrives_on_two_threads) {
    const crossing_graph c{40};
    const int steps = 15;
    const auto want = c.reference(steps);
    for (int round = 0; round < 24; ++round) {
        const int ranks = 1 + round % 2, workers = 2 + round % 3;
        std::vector<std::int64_t> last(c.n, -1);
        std::mutex lock;
        df::task_graph<std::int64_t> g{
            .tasks = c.n,
            .owner = [&](df::task_id t) { return static_cast<int>(t * ranks / c.n); },
            .edges = [&](df::task_id t) { return c.edges(t); },
            .body =
                [&](df::task<std::int64_t>& t) {
                    thread_local std::mt19937 rng(std::random_device{}());
                    std::vector<std::int64_t> in;
                    for (std::size_t i = 0; i < t.inputs(); ++i) in.push_back(t.input(i));
                    const std::int64_t v = crossing_graph::value(t.id(), t.step(), in);
                    for (std::size_t o = 0; o < t.edges().outputs.size(); ++o) {
                        t.emit(o, std::int64_t{v});
                        if (rng() % 4 == 0) csp::yield();
                    }
                    if (t.last_step()) {
                        std::lock_guard lk(lock);
                        last[t.id()] = v;
                    }
                },
            // Step 0's lag-1 inputs hold their producer's first value, from + 1.
            .initial = [&](df::task_id t, std::size_t i, int) -> std::int64_t { return c.inputs(t)[i].from + 1; },
        };
        const df::run_stats all = run_on_ranks(g, steps, ranks, workers, 2);
        ASSERT_EQ(last, want) << "round " << round << ": " << ranks << " ranks, " << workers << " workers";
        ASSERT_EQ(all.instances, static_cast<std::uint64_t>(c.n) * steps) << "round " << round;
        ASSERT_EQ(all.handed + all.sent, c.values(steps)) << "round " << round;
        ASSERT_EQ(all.sent, all.received) << "round " << round;
    }
}

// Two workers, eight independent tasks: share 0 holds tasks 0-3, whose
// bodies sleep, share 1 tasks 4-7, which return at once. Worker 1 runs out of
// its own work and takes share 0's: tasks of both shares run on worker 1,
// and each task runs once.
TEST(shares, a_worker_whose_share_ran_out_takes_another_shares_ready_work) {
    for (std::size_t threads : {1u, 2u}) {
        std::vector<int> runs(8, 0);
        df::task_graph<int> g{
            .tasks = 8,
            .owner = [](df::task_id) { return 0; },
            .edges = [](df::task_id) { return df::task_edges{}; },
            .body =
                [&](df::task<int>& t) {
                    ++runs[t.id()];
                    if (t.id() < 4) csp::sleep_for(std::chrono::milliseconds(20));
                },
        };
        df::graph_trace trace;
        csp::run(
            [&] {
                cc::run_local(1, [&](cc::local_communicator& comm) { df::run(comm, g, 1, {.workers = 2}, &trace); });
            },
            {.threads = threads});
        EXPECT_EQ(runs, std::vector<int>(8, 1)) << threads << " threads";
        std::set<df::task_id> on_worker_1;
        for (const auto& span : trace.tasks)
            if (span.worker == 1) on_worker_1.insert(span.id);
        EXPECT_TRUE(on_worker_1.count(4) && on_worker_1.count(7)) << threads << " threads";
        EXPECT_TRUE(std::any_of(on_worker_1.begin(), on_worker_1.end(), [](df::task_id id) { return id < 4; }))
            << threads << " threads: worker 1 never took share 0's work";
        ASSERT_EQ(trace.tasks.size(), 8u);
        EXPECT_TRUE(
            std::is_sorted(trace.tasks.begin(), trace.tasks.end(),
                           [](const df::task_span& a, const df::task_span& b) { return a.start_ns < b.start_ns; }))
            << "a trace merged from several shares is in time order";
    }
}

// A value carrying who made it and for which step.
struct stamp {
    df::task_id producer = -1;
    std::int32_t step = -1;
    std::int32_t pad = 0;
};

// Every step is a diamond per group of four tasks (a -> b, c -> d, lag 0)
// and d feeds the next step's a (lag 1), with the group's tasks spread over
// the ranks. Bodies sleep at random; each checks that every input is there
// and from the step it names.
TEST(dependences, hold_under_random_delays_on_two_threads) {
    const int ranks = 4, steps = 12, groups = 3;
    const df::task_id n = 4 * groups;
    std::atomic<int> wrong{0}, ran{0};
    df::task_graph<stamp> g{
        .tasks = n,
        .owner = [](df::task_id t) { return static_cast<int>((t * 7 + t / 4) % ranks); },
        .edges =
            [](df::task_id t) {
                const df::task_id base = t / 4 * 4;
                df::task_edges e;
                switch (t % 4) {
                    case 0:
                        e.inputs = {{base + 3, 1}};
                        e.outputs = {{base + 1, 0}, {base + 2, 0}};
                        break;
                    case 1:
                    case 2:
                        e.inputs = {{base, 0}};
                        e.outputs = {{base + 3, 0}};
                        break;
                    default:
                        e.inputs = {{base + 1, 0}, {base + 2, 0}};
                        e.outputs = {{base, 1}};
                }
                return e;
            },
        .body =
            [&](df::task<stamp>& t) {
                thread_local std::mt19937 rng(std::random_device{}());
                csp::sleep_for(std::chrono::microseconds(rng() % 300));
                for (std::size_t i = 0; i < t.inputs(); ++i) {
                    const auto& in = t.edges().inputs[i];
                    const stamp& v = t.input(i);
                    const int want = t.step() - in.lag;
                    if (want < 0 ? v.producer != -1 : (v.producer != in.from || v.step != want)) ++wrong;
                }
                ++ran;
                for (std::size_t o = 0; o < t.edges().outputs.size(); ++o) t.emit(o, stamp{t.id(), t.step(), 0});
            },
    };
    csp::run([&] { cc::run_local(ranks, [&](cc::local_communicator& comm) { df::run(comm, g, steps); }); },
             {.threads = 2});
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_EQ(ran.load(), n * steps);
}

// Independent tasks on one rank and one worker: the queue's order is the
// order they run in.
std::vector<df::task_id> order_of(df::task_graph<int> g, df::run_options o = {}) {
    std::vector<df::task_id> order;
    auto body = g.body;
    g.body = [&](df::task<int>& t) {
        order.push_back(t.id());
        body(t);
    };
    csp::run([&] { cc::run_local(1, [&](cc::local_communicator& comm) { df::run(comm, g, 1, o); }); });
    return order;
}

df::task_graph<int> independent(int n, std::vector<int>& results) {
    return df::task_graph<int>{
        .tasks = n,
        .owner = [](df::task_id) { return 0; },
        .edges = [](df::task_id) { return df::task_edges{}; },
        .body = [&results](df::task<int>& t) { results[t.id()] = static_cast<int>(t.id() * t.id()); },
    };
}

TEST(priorities, order_the_ready_tasks_and_never_the_results) {
    std::vector<int> plain(6), by_id(6), newest(6), want{0, 1, 4, 9, 16, 25};
    EXPECT_EQ(order_of(independent(6, plain)), (std::vector<df::task_id>{0, 1, 2, 3, 4, 5}));  // FIFO
    auto g = independent(6, by_id);
    g.priority = [](df::task_id t, int) -> std::int64_t { return t % 3; };
    EXPECT_EQ(order_of(g), (std::vector<df::task_id>{2, 5, 1, 4, 0, 3}));  // higher first, FIFO among equals
    EXPECT_EQ(order_of(independent(6, newest), {.queue = [] { return std::make_unique<df::newest_first>(); }}),
              (std::vector<df::task_id>{5, 4, 3, 2, 1, 0}));
    EXPECT_EQ(plain, want);
    EXPECT_EQ(by_id, want);
    EXPECT_EQ(newest, want);
}

TEST(priorities, older_first_runs_a_lower_step_before_a_higher_one) {
    // Two chains on one rank: task 0 runs many steps alone (no inputs from
    // task 1), and both are always ready; older_first keeps their steps
    // level, newest_first alone lets one run ahead.
    auto two = [](bool older, bool newest) {
        std::vector<std::pair<df::task_id, int>> seen;
        df::task_graph<int> g{
            .tasks = 2,
            .owner = [](df::task_id) { return 0; },
            .edges = [](df::task_id) { return df::task_edges{}; },
            .body = [&](df::task<int>& t) { seen.emplace_back(t.id(), t.step()); },
        };
        if (older) g.priority = df::older_first;
        df::run_options o;
        if (newest) o.queue = [] { return std::make_unique<df::newest_first>(); };
        csp::run([&] { cc::run_local(1, [&](cc::local_communicator& comm) { df::run(comm, g, 4, o); }); });
        return seen;
    };
    const std::vector<std::pair<df::task_id, int>> level{{0, 0}, {1, 0}, {0, 1}, {1, 1},
                                                         {0, 2}, {1, 2}, {0, 3}, {1, 3}};
    EXPECT_EQ(two(true, false), level);
    // newest first: task 1's next step, ready last, always runs next.
    EXPECT_EQ(two(false, true), (std::vector<std::pair<df::task_id, int>>{
                                    {1, 0}, {1, 1}, {1, 2}, {1, 3}, {0, 0}, {0, 1}, {0, 2}, {0, 3}}));
}

// A user-supplied ready queue sees every instance once.
struct counting_queue final : df::ready_queue {
    explicit counting_queue(std::atomic<int>& p) : pushes(p) {}
    void push(const df::ready_task& t) override {
        ++pushes;
        q.push_back(t);
    }
    df::ready_task pop() override {
        auto t = q.front();
        q.erase(q.begin());
        return t;
    }
    bool empty() const override { return q.empty(); }
    std::atomic<int>& pushes;
    std::vector<df::ready_task> q;
};

TEST(ready_queue_policy, a_user_queue_replaces_the_default_on_every_rank) {
    std::atomic<int> pushes{0};
    auto g = stencil(8, 2);
    csp::run([&] {
        cc::run_local(2, [&](cc::local_communicator& comm) {
            df::run(comm, g, 5, {.queue = [&] { return std::make_unique<counting_queue>(pushes); }});
        });
    });
    EXPECT_EQ(pushes.load(), 8 * 5);
}

// Regression: a queue factory that returned no queue was called on and
// dereferenced as the first instance became ready. The graph is refused on
// every rank, before any body runs, with an error that names the option.
TEST(ready_queue_policy, a_factory_that_makes_no_queue_is_refused_naming_the_option) {
    std::atomic<int> ran{0};
    auto g = stencil(8, 2);
    g.body = [&](df::task<std::int64_t>&) { ++ran; };
    std::vector<std::string> what(2);
    csp::run([&] {
        cc::run_local(2, [&](cc::local_communicator& comm) {
            try {
                df::run(comm, g, 3, {.queue = [] { return std::unique_ptr<df::ready_queue>{}; }});
            } catch (const csp::usage_error& e) {
                what[static_cast<std::size_t>(comm.rank())] = e.what();
            }
        });
    });
    for (const auto& w : what) EXPECT_NE(w.find("run_options::queue made no queue"), std::string::npos) << w;
    EXPECT_EQ(ran.load(), 0);
}

// What each rank's run() threw.
std::vector<std::string> failures(int ranks, std::size_t threads, const df::task_graph<std::int64_t>& g, int steps) {
    std::vector<std::string> what(ranks);
    csp::run(
        [&] {
            cc::run_local(ranks, [&](cc::local_communicator& comm) {
                try {
                    df::run(comm, g, steps);
                    what[comm.rank()] = "finished";
                } catch (const df::graph_error& e) {
                    what[comm.rank()] = std::string("graph_error: ") + e.what();
                } catch (const std::exception& e) {
                    what[comm.rank()] = std::string("own: ") + e.what();
                }
            });
        },
        {.threads = threads});
    return what;
}

// Regression: a rank that had finished its part of a graph kept the abort a
// rank that failed later sent it, and run_local then threw "every rank
// returned, and rank 1 is closing with 1 message no collective call took".
// A rank forgets its run's call when run() returns, whichever way: the
// abort is dropped. Rank 1's task has no edges and is done at once; rank 0's
// throws once rank 1 has returned; 300 graphs, one after another, fail the
// same way (more than the mailbox remembers: the oldest are let go).
TEST(finished_rank, an_abort_reaching_a_rank_that_finished_is_not_a_message_no_call_took) {
    df::task_graph<int> g{
        .tasks = 2,
        .owner = [](df::task_id t) { return static_cast<int>(t); },
        .edges = [](df::task_id) { return df::task_edges{}; },
        .body =
            [](df::task<int>& t) {
                if (t.id() != 0) return;
                csp::sleep_for(std::chrono::milliseconds(1));
                throw std::runtime_error("boom in task 0");
            },
        .initial = [](df::task_id, std::size_t, int) { return 0; },
    };
    std::vector<int> finished(2), failed(2);
    csp::run([&] {
        cc::run_local(2, [&](cc::local_communicator& comm) {
            for (int i = 0; i < 300; ++i) {
                try {
                    df::run(comm, g, 1);
                    ++finished[comm.rank()];
                } catch (const std::runtime_error& e) {
                    if (std::string(e.what()) == "boom in task 0") ++failed[comm.rank()];
                }
            }
            EXPECT_EQ(cc::allreduce(comm, 1, cc::sum{}), 2);  // the stream goes on
        });
    });
    EXPECT_EQ(finished, (std::vector<int>{0, 300}));
    EXPECT_EQ(failed, (std::vector<int>{300, 0}));
}

class failing_graph : public ::testing::TestWithParam<std::size_t> {};

TEST_P(failing_graph, a_throwing_task_stops_the_graph_on_every_rank) {
    auto g = stencil(8, 4);  // tasks 4 and 5 on rank 2
    auto body = g.body;
    g.body = [body](df::task<std::int64_t>& t) {
        if (t.id() == 5 && t.step() == 3) throw std::runtime_error("boom in task 5");
        body(t);
    };
    const auto what = failures(4, GetParam(), g, 40);
    EXPECT_EQ(what[2], "own: boom in task 5");
    for (int r : {0, 1, 3}) {
        EXPECT_EQ(what[r].rfind("graph_error: ", 0), 0u) << what[r];
        EXPECT_NE(what[r].find("rank 2, task 5 step 3: boom in task 5"), std::string::npos) << what[r];
    }
}

INSTANTIATE_TEST_SUITE_P(threads, failing_graph, ::testing::Values(1, 2));

// With one worker a body's values for local tasks are held until it returns
// (engine.hpp): a body that emits and then throws leaves them undelivered.
// Task 0 emits a vector to task 1 and throws at step 2; task 1 ran steps 0
// and 1 only, every value it ran with was task 0's of that step, and the
// run fails with task 0's error.
TEST(failing_graph_body, values_held_from_a_body_that_throws_are_dropped_with_it) {
    std::vector<int> consumer_steps;
    df::task_graph<std::vector<int>> g{
        .tasks = 2,
        .owner = [](df::task_id) { return 0; },
        .edges =
            [](df::task_id t) {
                df::task_edges e;
                if (t == 0) e.outputs = {{1, 0}};
                else e.inputs = {{0, 0}};
                return e;
            },
        .body =
            [&](df::task<std::vector<int>>& t) {
                if (t.id() == 1) {
                    EXPECT_EQ(t.input(0), std::vector<int>(100, t.step()));
                    consumer_steps.push_back(t.step());
                    return;
                }
                t.emit(0, std::vector<int>(100, t.step()));
                if (t.step() == 2) throw std::runtime_error("boom after emitting");
            },
    };
    std::string what;
    csp::run([&] {
        cc::run_local(1, [&](cc::local_communicator& comm) {
            try {
                df::run(comm, g, 5, {.workers = 1});
            } catch (const std::runtime_error& e) {
                what = e.what();
            }
        });
    });
    EXPECT_EQ(what, "boom after emitting");
    EXPECT_EQ(consumer_steps, (std::vector<int>{0, 1}));
}

TEST(failing_graph_body, a_missing_or_repeated_output_is_an_error_naming_the_edge) {
    auto g = stencil(4, 2);
    g.body = [](df::task<std::int64_t>& t) {
        if (t.id() == 1) return;  // emits nothing
        for (std::size_t o = 0; o < t.edges().outputs.size(); ++o) t.emit(o, 0);
    };
    auto what = failures(2, 1, g, 3);
    EXPECT_NE(what[0].find("task 1 step 0 returned without emitting output 0 (to task 1)"), std::string::npos)
        << what[0];
    EXPECT_NE(what[1].find("returned without emitting output 0"), std::string::npos) << what[1];

    g.body = [](df::task<std::int64_t>& t) {
        for (std::size_t o = 0; o < t.edges().outputs.size(); ++o) t.emit(o, 0);
        if (t.id() == 2) t.emit(0, 1);
    };
    what = failures(2, 1, g, 3);
    EXPECT_NE(what[1].find("task 2 (step 0) emits twice on output 0 (to task 2)"), std::string::npos) << what[1];
}

// Regression (a_lagged_output_without_a_consumer_may_be_left_out): a body was
// refused for leaving out a lagged output at one of the last steps, where
// the value has no consumer instance and is dropped anyway, so a body that
// hands its last state to the caller had to emit a dummy in its place.
TEST(task_graph_body, a_lagged_output_without_a_consumer_may_be_left_out) {
    // One task, x(s) = x(s-1) + x(s-2), x(-1) = 1, x(-2) = 0: x(s) = F(s + 2).
    const int steps = 10;
    std::int64_t last = -1;
    std::vector<int> emitted(steps, 0);
    df::task_graph<std::int64_t> g{
        .tasks = 1,
        .owner = [](df::task_id) { return 0; },
        .edges = [](df::task_id) { return df::task_edges{{{0, 1}, {0, 2}}, {{0, 1}, {0, 2}}}; },
        .body =
            [&](df::task<std::int64_t>& t) {
                const std::int64_t x = t.input(0) + t.input(1);
                const int s = t.step();
                if (s + 1 < steps) t.emit(0, std::int64_t{x}), ++emitted[s];
                if (s + 2 < steps) t.emit(1, std::int64_t{x}), ++emitted[s];
                if (t.last_step()) last = x;
            },
        .initial = [](df::task_id, std::size_t input, int step) -> std::int64_t {
            return input == 0 || step == 1 ? 1 : 0;  // x(-1), or x(-2) at step 0
        },
    };
    csp::run([&] {
        cc::run_local(1, [&](cc::local_communicator& comm) {
            const auto st = df::run(comm, g, steps);
            EXPECT_EQ(st.instances, static_cast<std::uint64_t>(steps));
            EXPECT_EQ(st.handed, static_cast<std::uint64_t>(2 * steps - 3));
        });
    });
    EXPECT_EQ(last, 89);  // F(11)
    EXPECT_EQ(emitted[steps - 3], 2);
    EXPECT_EQ(emitted[steps - 2], 1);
    EXPECT_EQ(emitted[steps - 1], 0);

    // A left-out output whose consumer instance exists is still an error.
    g.body = [&](df::task<std::int64_t>& t) {
        if (t.step() + 1 < steps) t.emit(0, std::int64_t{1});
    };
    std::string what;
    csp::run([&] {
        cc::run_local(1, [&](cc::local_communicator& comm) {
            try {
                df::run(comm, g, steps);
            } catch (const csp::usage_error& e) {
                what = e.what();
            }
        });
    });
    EXPECT_NE(what.find("task 0 step 0 returned without emitting output 1 (to task 0)"), std::string::npos) << what;
}

// Task 0 emits to task 1 (lag 0) and then waits up to 2 s for task 1's body
// to have run, with two workers: the value must reach a free worker before
// the producer's body ends, whether the other worker already idles when the
// value is emitted (task 0 sleeps first) or is busy then with task 2 (5 ms)
// and goes idle later. (Holding a body's values until it returns, to take
// the engine's lock once for them, fails the second case: the engine holds
// them only when it runs one worker.)
TEST(task_graph_body, a_value_emitted_while_a_worker_idles_starts_its_consumer_before_the_body_ends) {
    for (const bool other_busy : {false, true}) {
        for (const std::size_t threads : {1u, 2u}) {
            std::atomic<bool> consumer_ran{false};
            bool ran_during_producer = false;
            df::task_graph<int> g{
                .tasks = other_busy ? 3 : 2,
                .owner = [](df::task_id) { return 0; },
                .edges =
                    [](df::task_id t) {
                        df::task_edges e;
                        if (t == 0) e.outputs = {{1, 0}};
                        if (t == 1) e.inputs = {{0, 0}};
                        return e;
                    },
                .body =
                    [&](df::task<int>& t) {
                        if (t.id() == 1) {
                            consumer_ran = true;
                            return;
                        }
                        if (t.id() == 2 || !other_busy) csp::sleep_for(std::chrono::milliseconds(5));
                        if (t.id() == 2) return;
                        t.emit(0, 1);
                        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
                        while (!consumer_ran && std::chrono::steady_clock::now() < until)
                            csp::sleep_for(std::chrono::microseconds(100));
                        ran_during_producer = consumer_ran;
                    },
            };
            df::run_stats st;
            csp::run(
                [&] {
                    cc::run_local(1, [&](cc::local_communicator& comm) { st = df::run(comm, g, 1, {.workers = 2}); });
                },
                {.threads = threads});
            EXPECT_TRUE(ran_during_producer) << threads << " threads, other worker busy: " << other_busy;
            EXPECT_EQ(st.instances, other_busy ? 3u : 2u);
            EXPECT_EQ(st.handed, 1u);
        }
    }
}

// Each rank's usage_error from running `g` for `steps` on `ranks` ranks as
// fibers ("" where run() returned).
std::vector<std::string> errors_of_run(const df::task_graph<int>& g, int ranks, int steps,
                                       const df::run_options& options = {}) {
    std::vector<std::string> what(static_cast<std::size_t>(ranks));
    csp::run([&] {
        cc::run_local(ranks, [&](cc::local_communicator& comm) {
            try {
                df::run(comm, g, steps, options);
            } catch (const csp::usage_error& e) {
                what[static_cast<std::size_t>(comm.rank())] = e.what();
            }
        });
    });
    return what;
}

// Task 1 (rank 1) has an input from task 0 (rank 0), which lists no output
// to it; each body counts in `ran`.
df::task_graph<int> one_sided_edge(std::atomic<int>& ran) {
    return {
        .tasks = 2,
        .owner = [](df::task_id t) { return static_cast<int>(t); },
        .edges =
            [](df::task_id t) {
                df::task_edges e;
                if (t == 1) e.inputs = {{0, 0}};
                return e;
            },
        .body = [&ran](df::task<int>&) { ++ran; },
    };
}

// A graph whose two sides of an edge disagree is refused by every rank that
// owns either side, before any body runs.
TEST(refused_graphs, an_edge_named_on_one_side_only) {
    std::atomic<int> ran{0};
    const auto what = errors_of_run(one_sided_edge(ran), 2, 2);
    EXPECT_EQ(what[1],
              "task graph: task 1 has an input from task 0 (lag 0) that task 0 lists 0 times among its outputs");
    // Regression: rank 0 could not see the missing output and ran task 0
    // alone. The ranks now agree before anything runs.
    EXPECT_EQ(what[0], "task graph refused at rank 1: " + what[1]);
    EXPECT_EQ(ran.load(), 0);
}

// run_options::agree = false skips the comparison (for a small graph run
// many times): then, as before it existed, a rank cannot see its neighbour's
// refusal, and rank 0 runs task 0 alone.
TEST(refused_graphs, without_agreement_a_rank_cannot_see_another_ranks_refusal) {
    std::atomic<int> ran{0};
    const auto what = errors_of_run(one_sided_edge(ran), 2, 2, {.agree = false});
    EXPECT_EQ(what[0], "");
    EXPECT_EQ(what[1],
              "task graph: task 1 has an input from task 0 (lag 0) that task 0 lists 0 times among its outputs");
    EXPECT_EQ(ran.load(), 2);
}

// Regression: a cycle of lag-0 edges (each task waits for the other inside
// one step) ran into the runtime's deadlock report, which named only the
// engine's processes. Every rank now refuses it by name, inside a rank and
// across ranks.
TEST(refused_graphs, a_cycle_of_lag_0_edges_is_named_on_every_rank) {
    std::atomic<int> ran{0};
    df::task_graph<int> g{
        .tasks = 4,
        .owner = [](df::task_id t) { return static_cast<int>(t / 2); },
        .edges = [](df::task_id t) { return df::task_edges{.inputs = {{t ^ 1, 0}}, .outputs = {{t ^ 1, 0}}}; },
        .body = [&](df::task<int>& t) { ++ran, t.emit(0, 1); },
    };
    auto what = errors_of_run(g, 2, 3);
    EXPECT_EQ(what[0], "task graph: lag-0 edges form a cycle, so none of its tasks can start a step: task 0 takes an "
                       "input from task 1, which takes one from task 0 (inside a step the graph must be acyclic: give "
                       "one of these edges a lag)");
    EXPECT_EQ(what[1], "task graph: lag-0 edges form a cycle, so none of its tasks can start a step: task 2 takes an "
                       "input from task 3, which takes one from task 2 (inside a step the graph must be acyclic: give "
                       "one of these edges a lag)");
    // A ring 0 <- 3 <- 2 <- 1 <- 0 through both ranks; lag-1 edges and
    // the ring's own order do not count.
    g.edges = [](df::task_id t) {
        return df::task_edges{.inputs = {{(t + 1) % 4, 0}, {t, 1}}, .outputs = {{(t + 3) % 4, 0}, {t, 1}}};
    };
    g.body = [&](df::task<int>& t) { ++ran, t.emit(0, 1), t.emit(1, 1); };
    g.name = [](df::task_id t) { return "block " + std::to_string(t); };
    what = errors_of_run(g, 2, 3);
    EXPECT_EQ(what[0], "task graph: lag-0 edges form a cycle, so none of its tasks can start a step: block 0 takes an "
                       "input from block 1, which takes one from block 2, which takes one from block 3, which takes "
                       "one from block 0 (inside a step the graph must be acyclic: give one of these edges a lag)");
    EXPECT_NE(what[1].find("block 2 takes an input from block 3, which takes one from block 0, which takes one from "
                           "block 1, which takes one from block 2"),
              std::string::npos)
        << what[1];
    EXPECT_EQ(ran.load(), 0);
    // The same ring at lag 1 in one place runs.
    g.edges = [](df::task_id t) {
        const int lag = t == 3 ? 1 : 0;
        return df::task_edges{.inputs = {{(t + 1) % 4, lag}}, .outputs = {{(t + 3) % 4, t == 0 ? 1 : 0}}};
    };
    g.body = [&](df::task<int>& t) { ++ran, t.emit(0, 1); };
    what = errors_of_run(g, 2, 3);
    EXPECT_EQ(what, (std::vector<std::string>{"", ""}));
    EXPECT_EQ(ran.load(), 12);
}

// Regression: a negative worker count ran as the default (one per thread).
// It is refused, naming the option, at the rank that passed it, and every
// other rank hears of it through the agreement instead of waiting.
TEST(refused_graphs, a_negative_worker_count_is_refused_naming_the_option_on_every_rank) {
    std::atomic<int> ran{0};
    df::task_graph<int> g{
        .tasks = 2,
        .owner = [](df::task_id t) { return static_cast<int>(t); },
        .edges = [](df::task_id) { return df::task_edges{}; },
        .body = [&](df::task<int>&) { ++ran; },
    };
    std::vector<std::string> what(2);
    csp::run([&] {
        cc::run_local(2, [&](cc::local_communicator& comm) {
            try {
                df::run(comm, g, 3, {.workers = comm.rank() == 1 ? -2 : 0});
            } catch (const csp::usage_error& e) {
                what[comm.rank()] = e.what();
            }
        });
    });
    const std::string own =
        "dataflow::run: run_options::workers is -2 (a count of worker processes, or 0 for one per thread of the "
        "runtime)";
    EXPECT_EQ(what[1], own);
    EXPECT_EQ(what[0], "task graph refused at rank 1: " + own);
    EXPECT_EQ(ran.load(), 0);
}

// Regression: each rank read owner(), the task count and the step count
// alone. Ranks whose owner() disagreed each ran the tasks they thought
// theirs (task 0 twice, task 2 never) and reported success; a rank with
// more steps than its neighbour waited for ever. Every rank now refuses.
TEST(refused_graphs, ranks_that_disagree_on_owners_tasks_or_steps) {
    std::atomic<int> ran{0};
    df::task_graph<int> g{
        .tasks = 4,
        .edges = [](df::task_id t) { return df::task_edges{.inputs = {{t, 1}}, .outputs = {{t, 1}}}; },
        .body = [&](df::task<int>& t) { ++ran, t.emit(0, 1); },
    };
    thread_local int my_rank = 0;
    g.owner = [](df::task_id t) { return my_rank == 0 ? static_cast<int>(t / 2) : static_cast<int>(t / 2 + 1) % 2; };
    std::vector<std::string> what(2);
    auto run_as = [&](const df::task_graph<int>& graph, auto steps_of) {
        what.assign(2, "");
        csp::run([&] {
            cc::run_local(2, [&](cc::local_communicator& comm) {
                my_rank = comm.rank();
                try {
                    df::run(comm, graph, steps_of(comm.rank()));
                } catch (const csp::usage_error& e) {
                    what[comm.rank()] = e.what();
                }
            });
        });
    };
    run_as(g, [](int) { return 3; });
    const std::string owners =
        "task graph: the ranks do not run the same graph: rank 0: 4 tasks, 3 steps; rank 1: 4 tasks, 3 steps, a "
        "different owner() than rank 0 (every rank must run() one graph, with the same tasks and owner(), for the "
        "same number of steps)";
    EXPECT_EQ(what, (std::vector<std::string>{owners, owners}));
    g.owner = [](df::task_id t) { return static_cast<int>(t / 2); };
    run_as(g, [](int rank) { return 3 + rank; });
    const std::string steps = "task graph: the ranks do not run the same graph: rank 0: 4 tasks, 3 steps; rank 1: 4 "
                              "tasks, 4 steps (every rank must run() one graph, with the same tasks and owner(), for "
                              "the same number of steps)";
    EXPECT_EQ(what, (std::vector<std::string>{steps, steps}));
    EXPECT_EQ(ran.load(), 0);
    run_as(g, [](int) { return 3; });
    EXPECT_EQ(what, (std::vector<std::string>{"", ""}));
    EXPECT_EQ(ran.load(), 12);
}

TEST(refused_graphs, a_bad_owner_lag_or_task_id) {
    auto refused = [](df::task_graph<int> g) {
        try {
            csp::run([&] { cc::run_local(2, [&](cc::local_communicator& comm) { df::run(comm, g, 1); }); });
        } catch (const csp::usage_error& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    df::task_graph<int> g{
        .tasks = 2,
        .owner = [](df::task_id t) { return static_cast<int>(t * 5); },
        .edges = [](df::task_id) { return df::task_edges{}; },
        .body = [](df::task<int>&) {},
    };
    EXPECT_EQ(refused(g), "task graph: owner(1) is rank 5 of a group of 2");
    g.owner = [](df::task_id) { return 0; };
    g.edges = [](df::task_id t) { return df::task_edges{.inputs = {{t, -1}}, .outputs = {{t, -1}}}; };
    EXPECT_EQ(refused(g),
              "task graph: task 0 has an input of lag -1 (0: the same step, k: k steps later, at most 1048576)");
    g.edges = [](df::task_id) { return df::task_edges{.inputs = {{7, 0}}, .outputs = {}}; };
    EXPECT_EQ(refused(g), "task graph: task 0 names task 7 as an input: the graph has tasks 0..1");
    g.edges = {};
    EXPECT_EQ(refused(g), "dataflow::run: a task graph needs owner, edges and body");
}

// A value that travels k steps: task 0 sends its step to task 1 with lag 3
// (on another rank); task 1 sees the initial value for its first 3 steps,
// then step s - 3's.
TEST(lags, a_lag_k_edge_delivers_step_s_to_step_s_plus_k_and_initial_values_before) {
    std::vector<int> seen;
    df::task_graph<int> g{
        .tasks = 2,
        .owner = [](df::task_id t) { return static_cast<int>(t); },
        .edges =
            [](df::task_id t) {
                return t == 0 ? df::task_edges{.inputs = {}, .outputs = {{1, 3}}}
                              : df::task_edges{.inputs = {{0, 3}}, .outputs = {}};
            },
        .body =
            [&](df::task<int>& t) {
                if (t.id() == 0) t.emit(0, 100 + t.step());
                else seen.push_back(t.input(0));
            },
        .initial = [](df::task_id, std::size_t, int step) { return -1 - step; },
    };
    std::uint64_t sent = 0;
    csp::run([&] {
        auto st = cc::run_local(2, [&](cc::local_communicator& comm) { return df::run(comm, g, 7); });
        sent = st[0].sent;
    });
    EXPECT_EQ(seen, (std::vector<int>{-1, -2, -3, 100, 101, 102, 103}));
    EXPECT_EQ(sent, 4u);  // steps 4..6 of task 0 have no consumer step
}

TEST(reruns, a_graph_runs_again_on_the_same_communicator_between_collectives) {
    const df::task_id n = 9;
    auto g = stencil(n, 3);
    std::vector<std::int64_t> sums;
    csp::run([&] {
        auto got = cc::run_local(3, [&](cc::local_communicator& comm) {
            std::uint64_t total = 0;
            for (int steps : {0, 1, 6, 6}) {
                total += df::run(comm, g, steps).instances;
                total = cc::allreduce(comm, total, cc::sum{});
            }
            return total;
        });
        for (auto v : got) sums.push_back(static_cast<std::int64_t>(v));
    });
    // 0, then 9, then 9+9*6 summed over 3 ranks, ...: every rank agrees.
    ASSERT_EQ(sums.size(), 3u);
    EXPECT_EQ(sums[0], sums[1]);
    EXPECT_EQ(sums[1], sums[2]);
    EXPECT_EQ(sums[0], ((((0) * 3 + 9) * 3 + 9 * 6) * 3 + 9 * 6));
}

TEST(run_stats, body_time_is_summed_when_asked_and_left_zero_otherwise) {
    // Two independent tasks of 3 steps whose bodies each spin 300 us.
    df::task_graph<int> g{
        .tasks = 2,
        .owner = [](df::task_id) { return 0; },
        .edges =
            [](df::task_id t) {
                df::task_edges e;
                e.inputs.push_back({t, 1});
                e.outputs.push_back({t, 1});
                return e;
            },
        .body =
            [](df::task<int>& t) {
                const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(300);
                while (std::chrono::steady_clock::now() < until) {
                }
                t.emit(0, t.input(0) + 1);
            },
    };
    df::run_stats timed, untimed;
    csp::run([&] {
        cc::run_local(1, [&](cc::local_communicator& comm) {
            timed = df::run(comm, g, 3, {.time_bodies = true});
            untimed = df::run(comm, g, 3);
        });
    });
    EXPECT_EQ(timed.instances, 6u);
    EXPECT_EQ(untimed.instances, 6u);
    EXPECT_GE(timed.busy_ns, 6 * 300'000);
    EXPECT_LE(timed.busy_ns, timed.elapsed_ns);
    EXPECT_EQ(untimed.busy_ns, 0);
    EXPECT_GE(untimed.elapsed_ns, 6 * 300'000);
}

TEST(run_stats, folding_ranks_adds_counts_and_keeps_the_longer_elapsed_time) {
    df::run_stats a{.instances = 3, .sent = 1, .received = 2, .handed = 4, .busy_ns = 10, .elapsed_ns = 50};
    const df::run_stats b{.instances = 5, .sent = 2, .received = 1, .handed = 6, .busy_ns = 20, .elapsed_ns = 40};
    a += b;
    EXPECT_EQ(a.instances, 8u);
    EXPECT_EQ(a.sent, 3u);
    EXPECT_EQ(a.received, 3u);
    EXPECT_EQ(a.handed, 10u);
    EXPECT_EQ(a.busy_ns, 30);
    EXPECT_EQ(a.elapsed_ns, 50);
}

}  // namespace
