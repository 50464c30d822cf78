#pragma once
// A model::network as a CSPm script for FDR4, checked in the tests by FDR's
// own front end (libcspm's cspmcheck --eval).
//
// The network written is program_view(net) (network.hpp): daemons and their
// channels are left out. Every process is a component of one alphabetised
// parallel, so each event synchronises exactly the processes whose
// alphabets hold it:
//   - a rendezvous channel c is the events c.w.r (writer w, reader r); a
//     writer offers c.w.r to every reader r that the run saw on c, a reader
//     to every writer, as an any-to-any channel allows;
//   - a buffered channel is a buffer process between c_in.w and c_out.r that
//     holds up to its capacity and takes the recorded number of values; once
//     all are in it may end with values left unread, as the program may;
//   - a par is go.child for each child, then finish.child for each: a child
//     starts with go.child and ends with finish.child. A process no par
//     started runs from the start and just ends.
// Process i is P<i> (with helper definitions P<i>_<k>); PROC(i) and
// ALPHA(i) index them for the replicated parallel SYSTEM. A loop of the
// recorded run (fold() in network.hpp) is written once, as a process
// recursing on a count that starts at the number of passes recorded; the
// header comment lists what was folded.
// Assertions: deadlock freedom in the failures model, divergence freedom,
// and trace refinement against a specification when one is given.
#include <ostream>
#include <string>

#include "csp/model/network.hpp"

namespace csp::model {

struct cspm_options {
    std::string title = "network";
    // CSPm text defining a process named SPEC over the same events; when
    // set, `assert SPEC [T= SYSTEM` is added.
    std::string spec;
};

void write_cspm(std::ostream& os, const network& net, const cspm_options& options = {});

}  // namespace csp::model
