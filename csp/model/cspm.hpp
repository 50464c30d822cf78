#pragma once
// A model::network as a CSPm script for FDR4.
//
// Every process is a top-level component of one alphabetised parallel, so
// each event synchronises exactly the processes whose alphabets hold it:
//   - a rendezvous channel c is the events c.w.r (writer w, reader r); a
//     writer offers c.w.r to every reader r that the run saw on c, a reader
//     to every writer, as an any-to-any channel allows;
//   - a buffered channel is a buffer process between c_in.w and c_out.r that
//     holds up to its capacity and ends after the recorded number of values;
//   - a par is go.child for each child, then finish.child for each: a child
//     starts with go.child and ends with finish.child.
// Process i is PROC(i) with alphabet ALPHA(i); SYSTEM composes them all.
// A buffer ends only when empty, so values sent and never read count as a
// deadlock here (SPIN, like the runtime, accepts them).
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
