#pragma once
// A model::network as Promela, for SPIN.
//
// Rendezvous channels become `[0]` channels and buffered ones `[n]`; every
// process becomes one proctype. A par runs its children with `run` and
// waits for each to signal its own end on a private channel, so the parent
// continues only when all have finished, as par does. A verification run
// (spin -a; cc pan.c; ./pan) reports a deadlock as an invalid end state.
//
//   spin -a model.pml && gcc -O2 -DSAFETY -o pan pan.c && ./pan
#include <ostream>
#include <string>

#include "csp/model/network.hpp"

namespace csp::model {

void write_promela(std::ostream& os, const network& net, const std::string& title = "network");

}  // namespace csp::model
