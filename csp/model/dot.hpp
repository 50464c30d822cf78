#pragma once
// A model::network as a Graphviz picture: one node per process, one arrow
// per channel from each process that wrote to it to each that read it
// (dashed when buffered), and dotted grey arrows from a par to the
// processes it ran. Daemons are left out (program_view, network.hpp).
//
//   dot -Tsvg network.dot -o network.svg
#include <ostream>
#include <string>

#include "csp/model/network.hpp"

namespace csp::model {

void write_dot(std::ostream& os, const network& net, const std::string& title = "network");

}  // namespace csp::model
