// Must not compile: a task graph's values cross between nodes as their
// bytes, and this one's would carry its pointer.
#include <cstddef>

#include "collectives/net_communicator.hpp"
#include "dataflow/dataflow.hpp"

struct block {
    double* cells;
    std::size_t count;
};

void f(csp::collectives::net_communicator& comm, const csp::dataflow::task_graph<block>& g) {
    csp::dataflow::run(comm, g, 1);
}
