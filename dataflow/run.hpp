#pragma once
// Running a task graph: every rank of a communicator calls run() with the
// same graph and step count, and each runs the tasks it owns.
//
//   auto stats = df::run(comm, graph, 100);                      // defaults
//   df::run_options o{.workers = 2, .trace = true};
//   df::graph_trace tr;
//   df::run(comm, graph, 100, o, &tr);                           // and its trace
//
// run() returns when every instance of this rank finished, and throws when
// the graph failed while this rank still ran (task_graph.hpp, graph_error):
// a rank whose part was done keeps its result without waiting to hear how
// the others ended, so ranks that must agree on the outcome reduce it (an
// allreduce of "mine succeeded" with logical_and). Any communicator
// works: ranks as processes of one runtime, nodes over TCP or UCX, a hybrid
// job. Calls are collective like a collective operation's: every rank makes
// the same run() calls in the same order (each takes one tag of the default
// stream); graphs that run at the same time need different communicators.
#include <cstddef>
#include <functional>
#include <memory>

#include "csp/process.hpp"
#include "dataflow/detail/engine.hpp"

namespace csp::dataflow {

struct run_options {
    // Worker processes of this rank (0: one per thread of the runtime). A
    // body runs on a worker; several workers run bodies at once only on a
    // runtime with several threads, or when a body waits.
    int workers = 0;
    // Record a graph_trace (graph_trace.hpp).
    bool trace = false;
    // Sum the time spent in bodies into run_stats::busy_ns (two clock reads
    // per task instance, about a fifth of the engine's cost per instance on
    // a small body; a trace times them anyway).
    bool time_bodies = false;
    // The ready-queue policy (ready_queue.hpp); by_priority when empty.
    std::function<std::unique_ptr<ready_queue>()> queue{};
    // Whether the ranks compare their graphs before any body runs
    // (engine.hpp, Agreement): two messages per rank and run(), 20-50 us
    // over TCP. Every rank must pass the same; a program that runs one
    // small graph many times may skip it once the first run agreed, at the
    // price of the checks: ranks that then disagree run wrong or hang.
    bool agree = true;
};

template <collectives::communicator C, class V>
run_stats run(C& comm, const task_graph<V>& graph, int steps, const run_options& options = {},
              graph_trace* trace = nullptr) {
    typename detail::engine<C, V>::options o;
    // A negative count is refused by the engine, through the ranks'
    // agreement, so that every rank hears of it.
    o.workers = options.workers != 0 ? options.workers
                                     : static_cast<int>(std::max<std::size_t>(1, this_process::runtime_threads()));
    o.trace = options.trace || trace != nullptr;
    o.time_bodies = options.time_bodies;
    o.queue = options.queue;
    o.agree = options.agree;
    detail::engine<C, V> e(comm, graph, steps, std::move(o));
    auto stats = e.run();
    if (trace) *trace = e.take_trace();
    return stats;
}

}  // namespace csp::dataflow
