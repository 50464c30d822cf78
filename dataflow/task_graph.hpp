#pragma once
// A task graph: what runs, where, and which data it waits for.
//
// A graph of `tasks` tasks (ids 0..tasks-1) is described by functions of the
// task id, so that every rank can ask about any task and builds only its own
// part. `owner(id)` names the rank that runs the task (owner computes);
// `edges(id)` names the task's inputs and outputs; `body` is the task's work.
// A graph runs for a number of steps (iterations): step s of task t is one
// instance, and an edge either stays inside a step (lag 0) or carries data
// from step s of its producer to step s+k of its consumer (lag k: 1 for the
// next step, k for a value that travels k steps, as a panel does in MMULT).
//
//   df::task_graph<std::vector<double>> g{
//       .tasks = 8,
//       .owner = [](df::task_id t) { return int(t / 2); },
//       .edges = [](df::task_id t) { return df::task_edges{
//                    .inputs = {{t, 1}, {left(t), 1}},        // from (producer, lag)
//                    .outputs = {{t, 1}, {right(t), 1}}}; },  // to (consumer, lag)
//       .body = [](df::task<std::vector<double>>& t) {
//                    auto next = relax(t.input(0), t.input(1));
//                    t.emit(1, halo(next));
//                    t.emit(0, std::move(next)); }};
//   df::run(comm, g, 100);
//
// The rules that make the graph mean one thing on every rank:
//   - an edge is named twice, once as the producer's output {consumer, lag}
//     and once as the consumer's input {producer, lag}; run() checks that
//     both sides agree before anything runs;
//   - inside a step the graph is acyclic: run() refuses lag-0 edges that
//     close a cycle;
//   - every rank runs the same graph (tasks, owner()) for the same number of
//     steps: run() compares them across the ranks before anything runs, and
//     a graph refused by any rank fails every rank's run();
//   - the body emits exactly one value on every output, by its index in
//     `outputs`; a value is moved to a consumer on the same rank, and
//     encoded once to one on another rank;
//   - a task's steps run in step order (step s+1 of a task starts after its
//     step s finished), so one edge's values arrive in step order;
//   - at a step s < k a lag-k input has no producer step: it holds
//     `initial(consumer, input index, s)` (V{} without `initial`); at a step s with
//     s + k >= steps a lag-k output has no consumer step: what is emitted
//     on it is dropped, and the body may leave it out;
//   - `priority(id, step)` is metadata: among ready tasks the higher runs
//     first (ready_queue.hpp). It never changes a result, since a task runs
//     only once every input it names is there;
//   - `priority` and `initial` are called under a lock of the rank's engine
//     (a spinlock: its holders never suspend): they must return without
//     waiting on a channel, a port or a collective, or sleeping (a body may
//     do any of those).
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "csp/error.hpp"

namespace csp::dataflow {

using task_id = std::int64_t;

// Where an input comes from: the producer's output in the same step (lag
// 0) or `lag` steps before.
struct input {
    task_id from = 0;
    int lag = 0;
    friend bool operator==(const input&, const input&) = default;
};

// Where an output goes: the consumer's input in the same step or `lag`
// steps later.
struct output {
    task_id to = 0;
    int lag = 0;
    friend bool operator==(const output&, const output&) = default;
};

struct task_edges {
    std::vector<input> inputs;    // the order the body reads them in
    std::vector<output> outputs;  // the order the body emits them in
};

// A graph failed: a task threw, or a rank the graph needs is lost. The
// run() of every rank still running throws it (the rank where a task threw
// rethrows that task's own exception; a lost peer is its peer_error); a rank
// that had finished its part returns normally.
class graph_error : public error {
public:
    using error::error;
};

namespace detail {
// Where a task's emitted values go (the engine, engine.hpp).
template <class V>
class output_sink {
public:
    virtual void put(std::size_t output, V&& value) = 0;

protected:
    ~output_sink() = default;
};
}  // namespace detail

// What the body of one task instance sees.
template <class V>
class task {
public:
    // `emitted` holds one zero per output; the engine owns it, so that an
    // instance allocates nothing for its bookkeeping.
    task(task_id id, int step, int steps, std::vector<V>& inputs, const task_edges& edges,
         detail::output_sink<V>& sink, std::span<char> emitted)
        : id_(id),
          step_(step),
          steps_(steps),
          inputs_(&inputs),
          edges_(&edges),
          sink_(&sink),
          emitted_(emitted) {}

    task_id id() const noexcept { return id_; }
    int step() const noexcept { return step_; }
    bool first_step() const noexcept { return step_ == 0; }
    bool last_step() const noexcept { return step_ + 1 == steps_; }

    // Input i as listed in edges(id).inputs; the body may move from it.
    V& input(std::size_t i) {
        if (i >= inputs_->size())
            throw usage_error("task " + std::to_string(id_) + " reads input " + std::to_string(i) + " of " +
                              std::to_string(inputs_->size()));
        return (*inputs_)[i];
    }
    std::size_t inputs() const noexcept { return inputs_->size(); }
    const task_edges& edges() const noexcept { return *edges_; }

    // Sends `value` on output i as listed in edges(id).outputs; once per
    // output and step.
    void emit(std::size_t i, V value) {
        if (i >= emitted_.size())
            throw usage_error("task " + std::to_string(id_) + " emits on output " + std::to_string(i) + " of " +
                              std::to_string(emitted_.size()));
        if (emitted_[i])
            throw usage_error("task " + std::to_string(id_) + " (step " + std::to_string(step_) +
                              ") emits twice on output " + std::to_string(i) + " (to task " +
                              std::to_string(edges_->outputs[i].to) + ")");
        emitted_[i] = 1;
        sink_->put(i, std::move(value));
    }

    // The outputs not emitted yet whose consumer instance exists (the engine
    // checks after the body). A lagged output of one of the last steps has
    // none (step + lag is past the run): emitting on it is allowed and drops
    // the value, leaving it out is no error.
    std::vector<std::size_t> missing() const {
        std::vector<std::size_t> out;
        for (std::size_t i = 0; i < emitted_.size(); ++i)
            if (!emitted_[i] && static_cast<std::int64_t>(step_) + edges_->outputs[i].lag < steps_) out.push_back(i);
        return out;
    }

private:
    task_id id_;
    int step_;
    int steps_;
    std::vector<V>* inputs_;
    const task_edges* edges_;
    detail::output_sink<V>* sink_;
    std::span<char> emitted_;
};

template <class V>
struct task_graph {
    task_id tasks = 0;
    std::function<int(task_id)> owner{};
    std::function<task_edges(task_id)> edges{};
    std::function<void(task<V>&)> body{};
    // Optional metadata and initial values (see above).
    std::function<std::int64_t(task_id, int step)> priority{};
    std::function<V(task_id task, std::size_t input, int step)> initial{};
    // Optional, for traces and errors: a task's name ("relax 3").
    std::function<std::string(task_id)> name{};
};

// Ready-made priority metadata.
//   older_first: a lower step first (Thyme's fix for MMULT's pipeline).
inline std::int64_t older_first(task_id, int step) { return -static_cast<std::int64_t>(step); }

}  // namespace csp::dataflow
