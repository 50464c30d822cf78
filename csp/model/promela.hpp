#pragma once
// A model::network as Promela, for SPIN.
//
// Rendezvous channels become `[0]` channels and buffered ones `[n]`; every
// process becomes one proctype. A par runs its children with `run` and
// waits for each to signal its own end on a private channel, so the parent
// continues only when all have finished, as par does. Processes no par
// started (a node's own processes) are run by init beside processes[0].
// The network written is program_view(net): daemons and their channels are
// left out. A loop of the recorded run (fold(), network.hpp) becomes a `do`
// loop over a counter. A verification run (spin -a; cc pan.c; ./pan)
// reports a deadlock as an invalid end state; values left in a buffered
// channel at the end are not one, as in the program.
//
//   spin -a model.pml && gcc -O2 -DSAFETY -o pan pan.c && ./pan
#include <ostream>
#include <string>

#include "csp/model/network.hpp"

namespace csp::model {

void write_promela(std::ostream& os, const network& net, const std::string& title = "network");

}  // namespace csp::model
