// What the task-graph engine (dataflow/) costs per task instance, beside
// oneTBB's flow graph running the same dependences, and beside a plain loop
// that does the arithmetic with no scheduler at all.
//
// The graph: a 1-D stencil of 64 tasks for 200 steps (Jacobi's shape: step
// s of task g needs step s-1 of tasks g-1, g and g+1), one rank, bodies of
// a few additions, so the figure is the scheduler's own cost.
//
//   stencil/graph/threads:N     ns per instance, this project (values are
//                               int64 handed along the edges; N runtime
//                               threads, N workers)
//   stencil/graph_one_worker/threads:2
//                               one worker on two runtime threads: a lone
//                               process that yields between bodies, with
//                               an idle worker that could take it
//   stencil/tbb_flow/threads:N  ns per node run, oneTBB: one continue_node per
//                               (task, step), built once outside the timing,
//                               values in a shared array; N threads
//   stencil/ratio/threads:N     graph / tbb_flow
//   stencil/graph_vector        as stencil/graph with 1 KiB vectors for values
//                               (moved along local edges, copied to neighbours)
//   stencil/loop                the same sums as two nested loops
//   stencil/graph_2us/threads:N, stencil/tbb_flow_2us/threads:N
//                               the same graphs with bodies of about 2 us
//                               of arithmetic each (`work_rounds`)
//   stencil/speedup_2us/graph, stencil/speedup_2us/tbb_flow
//                               1 thread / 2 threads of those: whether a
//                               second core is used
//
//   ./build/bench/dataflow_bench --benchmark_format=json
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/peer_ratio.hpp"
#include "collectives/collectives.hpp"
#include "dataflow/dataflow.hpp"

#if CSP_BENCH_WITH_TBB
#include <tbb/flow_graph.h>
#include <tbb/global_control.h>
#endif

namespace {

namespace cc = csp::collectives;
namespace df = csp::dataflow;

constexpr df::task_id tasks = 64;
constexpr int steps = 200;
constexpr double instances = static_cast<double>(tasks) * steps;

std::int64_t mix(std::int64_t a, std::int64_t b) { return (a + b) & 0xffff; }

// A body's own work for the *_2us rows: a chain of dependent multiplies,
// about 2 us at 2.4 GHz; the result stays a value mix() accepts.
constexpr int work_rounds = 1500;
std::int64_t work(std::int64_t v, int rounds) {
    std::uint64_t x = static_cast<std::uint64_t>(v) | 1;
    for (int i = 0; i < rounds; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
    return v ^ static_cast<std::int64_t>(x >> 60);
}

// Reports ns per instance over the timed seconds, and records it for the
// ratio (bench/peer_ratio.hpp) as `name`.
void report(benchmark::State& state, double seconds, const std::string& name) {
    const double ns = 1e9 * seconds / (static_cast<double>(state.iterations()) * instances);
    state.counters["ns_per_instance"] = ns;
    bench::record(name, ns);
}

df::task_edges stencil_edges(df::task_id g) { return df::stencil_1d(g, tasks); }

// Runs the stencil once per benchmark iteration with `threads` runtime
// threads and `workers` workers, timing the graph's run alone, and reports it
// as `name`.
template <class V>
void time_graph(benchmark::State& state, int threads, int workers, const df::task_graph<V>& g,
                const std::string& name) {
    double seconds = 0;
    for (auto _ : state) {
        double s = 0;
        csp::run(
            [&] {
                cc::run_local(1, [&](cc::local_communicator& comm) {
                    const auto t0 = std::chrono::steady_clock::now();
                    df::run(comm, g, steps, {.workers = workers, .agree = false});
                    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                });
            },
            {.threads = static_cast<std::size_t>(threads)});
        seconds += s;
        state.SetIterationTime(s);
    }
    report(state, seconds, name);
}

void stencil_graph_on(benchmark::State& state, int threads, int workers, const std::string& name, int rounds = 0) {
    std::int64_t total = 0;
    df::task_graph<std::int64_t> g{
        .tasks = tasks,
        .owner = [](df::task_id) { return 0; },
        .edges = stencil_edges,
        .body =
            [&](df::task<std::int64_t>& t) {
                std::int64_t v = t.input(0);
                for (std::size_t i = 1; i < t.inputs(); ++i) v = mix(v, t.input(i));
                if (rounds > 0) v = work(v, rounds);
                if (t.last_step()) total += v;
                for (std::size_t o = 0; o < t.edges().outputs.size(); ++o) t.emit(o, v);
            },
        .initial = [](df::task_id id, std::size_t, int) { return static_cast<std::int64_t>(id); },
    };
    time_graph(state, threads, workers, g, name);
    benchmark::DoNotOptimize(total);
}

void stencil_graph(benchmark::State& state) {
    const int threads = static_cast<int>(state.range(0));
    stencil_graph_on(state, threads, threads, "stencil/graph/threads:" + std::to_string(threads));
}

void stencil_graph_2us(benchmark::State& state) {
    const int threads = static_cast<int>(state.range(0));
    stencil_graph_on(state, threads, threads, "stencil/graph_2us/threads:" + std::to_string(threads), work_rounds);
}

void stencil_graph_one_worker(benchmark::State& state) {
    const int threads = static_cast<int>(state.range(0));
    stencil_graph_on(state, threads, 1, "stencil/graph_one_worker/threads:" + std::to_string(threads));
}

void stencil_graph_vector(benchmark::State& state) {
    using V = std::vector<double>;
    double total = 0;
    df::task_graph<V> g{
        .tasks = tasks,
        .owner = [](df::task_id) { return 0; },
        .edges = stencil_edges,
        .body =
            [&](df::task<V>& t) {
                V v = std::move(t.input(0));
                for (std::size_t i = 1; i < t.inputs(); ++i)
                    for (std::size_t k = 0; k < v.size(); ++k) v[k] = 0.5 * (v[k] + t.input(i)[k]);
                if (t.last_step()) total += v[0];
                for (std::size_t o = 1; o < t.edges().outputs.size(); ++o) t.emit(o, V(v));
                t.emit(0, std::move(v));
            },
        .initial = [](df::task_id id, std::size_t, int) { return V(128, static_cast<double>(id)); },
    };
    time_graph(state, 1, 1, g, "stencil/graph_vector");
    benchmark::DoNotOptimize(total);
}

#if CSP_BENCH_WITH_TBB
void stencil_tbb_flow_on(benchmark::State& state, int rounds, const std::string& row) {
    using node = tbb::flow::continue_node<tbb::flow::continue_msg>;
    const int threads = static_cast<int>(state.range(0));
    tbb::global_control only(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
    tbb::flow::graph graph;
    // values[s % 2][g]: what step s of task g reads. Node (s, g) writes
    // values[(s + 1) % 2][g]; a node of step s + 1 that overwrites a value
    // step s reads depends on that very reader, so no write comes early.
    std::vector<std::int64_t> values[2] = {std::vector<std::int64_t>(tasks), std::vector<std::int64_t>(tasks)};
    std::vector<std::unique_ptr<node>> nodes;
    nodes.reserve(static_cast<std::size_t>(instances));
    for (int s = 0; s < steps; ++s)
        for (df::task_id g = 0; g < tasks; ++g)
            nodes.push_back(std::make_unique<node>(graph, [&, s, g](const tbb::flow::continue_msg&) {
                const auto& in = values[s % 2];
                std::int64_t v = in[g];
                if (g > 0) v = mix(v, in[g - 1]);
                if (g < tasks - 1) v = mix(v, in[g + 1]);
                if (rounds > 0) v = work(v, rounds);
                values[(s + 1) % 2][g] = v;
                return tbb::flow::continue_msg{};
            }));
    auto at = [&](int s, df::task_id g) -> node& { return *nodes[static_cast<std::size_t>(s * tasks + g)]; };
    for (int s = 1; s < steps; ++s)
        for (df::task_id g = 0; g < tasks; ++g)
            for (df::task_id from = g - 1; from <= g + 1; ++from)
                if (from >= 0 && from < tasks) tbb::flow::make_edge(at(s - 1, from), at(s, g));
    double seconds = 0;
    std::int64_t total = 0;
    for (auto _ : state) {
        for (df::task_id g = 0; g < tasks; ++g) values[0][g] = g;
        const auto t0 = std::chrono::steady_clock::now();
        for (df::task_id g = 0; g < tasks; ++g) at(0, g).try_put(tbb::flow::continue_msg{});
        graph.wait_for_all();
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        seconds += s;
        state.SetIterationTime(s);
        for (auto v : values[steps % 2]) total += v;
    }
    benchmark::DoNotOptimize(total);
    report(state, seconds, row + std::to_string(threads));
}

void stencil_tbb_flow(benchmark::State& state) { stencil_tbb_flow_on(state, 0, "stencil/tbb_flow/threads:"); }
void stencil_tbb_flow_2us(benchmark::State& state) {
    stencil_tbb_flow_on(state, work_rounds, "stencil/tbb_flow_2us/threads:");
}
#endif

void stencil_loop(benchmark::State& state) {
    std::vector<std::int64_t> cur(tasks), next(tasks);
    for (auto _ : state) {
        for (df::task_id g = 0; g < tasks; ++g) cur[g] = g;
        for (int s = 0; s < steps; ++s) {
            for (df::task_id g = 0; g < tasks; ++g) {
                std::int64_t v = cur[g];
                if (g > 0) v = mix(v, cur[g - 1]);
                if (g < tasks - 1) v = mix(v, cur[g + 1]);
                next[g] = v;
            }
            std::swap(cur, next);
            benchmark::ClobberMemory();
        }
        benchmark::DoNotOptimize(cur.data());
    }
    state.counters["ns_per_instance"] =
        benchmark::Counter(static_cast<double>(state.iterations()) * instances,
                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

}  // namespace

BENCHMARK(stencil_graph)->Name("stencil/graph")->ArgName("threads")->Arg(1)->Arg(2)->UseManualTime();
BENCHMARK(stencil_graph_one_worker)->Name("stencil/graph_one_worker")->ArgName("threads")->Arg(2)->UseManualTime();
BENCHMARK(stencil_graph_vector)->Name("stencil/graph_vector")->UseManualTime();
#if CSP_BENCH_WITH_TBB
BENCHMARK(stencil_tbb_flow)->Name("stencil/tbb_flow")->ArgName("threads")->Arg(1)->Arg(2)->UseManualTime();
#endif
BENCHMARK(stencil_loop)->Name("stencil/loop")->UseRealTime();
BENCHMARK(stencil_graph_2us)->Name("stencil/graph_2us")->ArgName("threads")->Arg(1)->Arg(2)->UseManualTime();
#if CSP_BENCH_WITH_TBB
BENCHMARK(stencil_tbb_flow_2us)->Name("stencil/tbb_flow_2us")->ArgName("threads")->Arg(1)->Arg(2)->UseManualTime();
#endif

int main(int argc, char** argv) {
#if CSP_BENCH_WITH_TBB
    for (const char* t : {"1", "2"})
        bench::register_ratio(std::string("stencil/ratio/threads:") + t, std::string("stencil/graph/threads:") + t,
                              std::string("stencil/tbb_flow/threads:") + t);
    bench::register_ratio("stencil/ratio_2us/threads:2", "stencil/graph_2us/threads:2",
                          "stencil/tbb_flow_2us/threads:2");
    bench::register_ratio("stencil/speedup_2us/tbb_flow", "stencil/tbb_flow_2us/threads:1",
                          "stencil/tbb_flow_2us/threads:2");
#endif
    bench::register_ratio("stencil/speedup_2us/graph", "stencil/graph_2us/threads:1", "stencil/graph_2us/threads:2");
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
}
