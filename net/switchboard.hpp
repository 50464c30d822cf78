#pragma once
// The switch: the one process of a node that routes. Everything the node does
// passes through its input channel (node_core.hpp), so the link table needs
// no lock and every decision about a link is taken in one place, in order.
//
//            user processes                      ports (one channel each)
//                  | send                            ^
//                  v                                 | messages, in order
//   listener -> greeters -> [ switch ]               transport: inbound  <- peer
//   connectors ----------->     |  frames ---------> transport: outbound -> peer
//
// The switch also delivers a node's messages to itself, and tells every port
// when a peer is lost.
//
// The switch knows a connection only as a link (link.hpp: its states, queue
// and error) and what carries it only as a transport (transport.hpp).
//
// Closing the node: the listener and greeters stop; every link sends what is
// queued, then goodbye, and waits for the peer's goodbye and end of file (at
// most options.linger); links still being set up are completed first. Then
// the nameserver entry is dropped and close() returns.
#include <memory>

#include "net/detail/node_core.hpp"
#include "net/nameserver_client.hpp"

namespace csp::net::detail {

void run_switch(std::shared_ptr<node_core> core, unique_fd listener, registration entry);

}  // namespace csp::net::detail
