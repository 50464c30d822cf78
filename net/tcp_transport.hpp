#pragma once
// The TCP transport: a link's frames on the connection its handshake used.
// Two processes serve it:
//
// inbound   reads the socket whenever the IO scheduler says it is readable,
//           cuts the bytes into frames (frame_reader.hpp), and delivers the
//           complete data frames of each read, in order, into their ports'
//           channels (the port table is shared under the node's lock; a hop
//           through the switch would cost a fiber switch per message and
//           decide nothing). Payloads of up to a read buffer are copied out of
//           it once; larger ones are read straight into their own block, so a
//           large message costs no copy.
// outbound  takes frames from the link's queue (which the switch fills and
//           which never blocks the switch), gathers what is queued into one
//           sendmsg, and waits for writability only when the socket is full.
//
// Protocol faults (frame.hpp) end the link; whatever was received intact
// before them has already been delivered. The link's transport (transport.cpp)
// runs these once both sides' `transports` frames chose TCP; its interrupt()
// shuts the socket down both ways, which wakes both processes.
#include "net/transport.hpp"

namespace csp::net::detail {

void run_tcp_inbound(std::shared_ptr<node_core> core, int peer, int fd);
void run_tcp_outbound(std::shared_ptr<node_core> core, int peer, int fd, csp::reader<outgoing> queue);

}  // namespace csp::net::detail
