#pragma once
// Recording a collective as a model.
//
//   csp::model::network net = csp::collectives::record_local(8, [](auto& comm) {
//       csp::collectives::reduce_binomial_parallel(comm, 1, csp::collectives::sum{}, 0);
//   });
//   csp::model::write_promela(file, net);
//
// A collective's messages depend only on rank and size, so one run gives its
// exact process network: a process per rank (and per parallel receive),
// and per rank-to-rank message one buffered channel of the model (sends
// never block). local_communicator reports its messages to the recorder and
// keeps its mailbox channels out of the model. A receive from any rank is
// recorded as the sender it got; the model's notes say so.
#include "collectives/local_communicator.hpp"
#include "csp/model/recorder.hpp"
#include "csp/runtime.hpp"

namespace csp::collectives {

// Runs body(comm) at every rank of an n-rank local group on one thread,
// recording, and returns the network.
template <class F>
model::network record_local(int n, F body) {
    model::recorder rec;
    csp::run([&] { run_local(n, [&](local_communicator& c) { body(c); }); });
    return rec.take();
}

}  // namespace csp::collectives
