#pragma once
// Edges of common graph shapes, for task_graph::edges.
//
//   .edges = [n](df::task_id t) { return df::stencil_1d(t, n); },
#include <string>

#include "csp/error.hpp"
#include "dataflow/task_graph.hpp"

namespace csp::dataflow {

// Task t of a 1-D stencil of n tasks: each step of t takes the step `lag`
// earlier of t itself and of its neighbours t - 1 and t + 1 where they exist
// (Jacobi's shape, one band of rows per task). Inputs and outputs come in
// the same order: t itself, then t - 1, then t + 1. So input 0 is the task's
// own last value, and input 1 is the left neighbour's, except at task 0,
// whose input 1 is the right neighbour's.
inline task_edges stencil_1d(task_id t, task_id n, int lag = 1) {
    if (n < 1 || t < 0 || t >= n)
        throw usage_error("dataflow::stencil_1d: task " + std::to_string(t) + " of a stencil of " + std::to_string(n) +
                          " tasks (0 <= task < tasks)");
    if (lag < 1)
        throw usage_error("dataflow::stencil_1d: lag " + std::to_string(lag) +
                          " (a step takes its inputs from the step `lag` earlier: at least 1)");
    task_edges e;
    e.inputs.push_back({t, lag});
    e.outputs.push_back({t, lag});
    if (t > 0) e.inputs.push_back({t - 1, lag}), e.outputs.push_back({t - 1, lag});
    if (t < n - 1) e.inputs.push_back({t + 1, lag}), e.outputs.push_back({t + 1, lag});
    return e;
}

}  // namespace csp::dataflow
