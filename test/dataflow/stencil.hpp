#pragma once
// The graph the dataflow tests share: a 1-D integer stencil whose answer
// does not depend on the order of evaluation, and its sequential reference.
#include <cstdint>
#include <utility>
#include <vector>

#include "dataflow/shapes.hpp"
#include "dataflow/task_graph.hpp"

namespace dataflow_test {

namespace df = csp::dataflow;

// Cell t.id()'s value at step t.step() from its inputs (below).
inline std::int64_t stencil_value(df::task<std::int64_t>& t) {
    std::int64_t v = 3 * t.input(0) + t.step();
    for (std::size_t i = 1; i < t.inputs(); ++i) v += t.input(i);
    return v % 1000000007;
}

// A 1-D stencil over n cells, each a task: cell i at step s is
// 3*own + left + right + s from step s-1 (missing neighbours count 0),
// starting from i + 1. Integers, so any order of evaluation gives the same
// bits; a value read from the wrong step changes the answer.
inline df::task_graph<std::int64_t> stencil(df::task_id n, int ranks) {
    const df::task_id per = (n + ranks - 1) / ranks;
    return df::task_graph<std::int64_t>{
        .tasks = n,
        .owner = [per](df::task_id t) { return static_cast<int>(t / per); },
        .edges = [n](df::task_id t) { return df::stencil_1d(t, n); },
        .body =
            [](df::task<std::int64_t>& t) {
                const std::int64_t v = stencil_value(t);
                for (std::size_t o = 0; o < t.edges().outputs.size(); ++o) t.emit(o, v);
            },
        // Input 0 is the cell itself, 1 its left neighbour (or its right
        // one for cell 0), 2 its right one.
        .initial = [](df::task_id t, std::size_t input, int) -> std::int64_t {
            if (input == 0) return t + 1;
            return (input == 1 && t > 0 ? t - 1 : t + 1) + 1;
        },
    };
}

inline std::vector<std::int64_t> stencil_reference(df::task_id n, int steps) {
    std::vector<std::int64_t> cur(n), next(n);
    for (df::task_id i = 0; i < n; ++i) cur[i] = i + 1;
    for (int s = 0; s < steps; ++s) {
        for (df::task_id i = 0; i < n; ++i) {
            std::int64_t v = 3 * cur[i] + s;
            if (i > 0) v += cur[i - 1];
            if (i < n - 1) v += cur[i + 1];
            next[i] = v % 1000000007;
        }
        std::swap(cur, next);
    }
    return cur;
}

}  // namespace dataflow_test
