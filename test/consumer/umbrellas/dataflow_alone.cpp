// dataflow/dataflow.hpp, and the communicator the graph runs over: a chain
// of 3 tasks on 2 ranks adds the ids.
#include <atomic>

#include "collectives/local_communicator.hpp"
#include "dataflow/dataflow.hpp"

int dataflow_alone() {
    namespace df = csp::dataflow;
    std::atomic<int> last{-1};
    const df::task_graph<int> chain{
        .tasks = 3,
        .owner = [](df::task_id t) { return static_cast<int>(t % 2); },
        .edges = [](df::task_id t) {
            df::task_edges e;
            if (t > 0) e.inputs = {{t - 1, 0}};
            if (t < 2) e.outputs = {{t + 1, 0}};
            return e;
        },
        .body = [&](df::task<int>& t) {
            const int v = (t.inputs() ? t.input(0) : 10) + static_cast<int>(t.id());
            if (t.id() < 2) t.emit(0, v);
            else last = v;
        },
    };
    csp::run([&] {
        csp::collectives::run_local(2, [&](csp::collectives::local_communicator& c) { df::run(c, chain, 1); });
    });
    return last;
}
