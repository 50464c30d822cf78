#pragma once
// Dataflow task graphs (Thyme): a loop nest as many tasks per rank, each run
// as soon as the data it names has arrived, so that communication overlaps
// computation without split-phase code; priorities are metadata that steer
// which ready task runs first and never change a result.
//
//   task_graph.hpp    describing a graph: tasks, owners, edges, bodies
//   shapes.hpp        edges of common shapes (a 1-D stencil)
//   ready_queue.hpp   which ready task runs next (by priority, newest first, yours)
//   run.hpp           running it over any communicator
//   graph_trace.hpp   what ran when: Chrome trace-event JSON and a text Gantt chart
#include "csp/csp.hpp"  // csp::run, par, select: a program needs no other include
#include "dataflow/graph_trace.hpp"
#include "dataflow/ready_queue.hpp"
#include "dataflow/run.hpp"
#include "dataflow/shapes.hpp"
#include "dataflow/task_graph.hpp"
