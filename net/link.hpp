#pragma once
// The two processes that serve one connection to a peer (a link).
//
// inbound   reads the socket whenever the IO scheduler says it is readable,
//           cuts the bytes into frames, and delivers the complete data frames
//           of each read, in order, into their ports' channels (the port table
//           is shared under the node's lock; a hop through the switch would
//           cost a fiber switch per message and decide nothing). Payloads of up
//           to a read buffer are copied out of it once; larger ones are read
//           straight into their own block, so a large message costs no copy.
// outbound  takes frames from its queue (which the switch fills and which
//           never blocks the switch), gathers what is queued into one sendmsg,
//           and waits for writability only when the socket is full.
//
// Each reports the link's end to the switch once (link_down: clean after the
// peer's goodbye, otherwise with the reason) and then, as its very last act,
// that it has exited. Protocol faults (frame.hpp) end the link; whatever was
// received intact before them has already been delivered.
#include <memory>
#include <optional>

#include "csp/channel.hpp"
#include "net/detail/node_core.hpp"

namespace csp::net::detail {

void run_inbound(std::shared_ptr<node_core> core, int peer, int fd);
void run_outbound(std::shared_ptr<node_core> core, int peer, int fd, csp::reader<outgoing> queue,
                  std::optional<outgoing> first);

}  // namespace csp::net::detail
