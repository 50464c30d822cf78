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
// before them has already been delivered. interrupt() shuts the socket down
// both ways, which wakes both processes; the socket is closed when the
// transport is destroyed, after both have exited.
#include "net/transport.hpp"

namespace csp::net::detail {

class tcp_transport final : public transport {
public:
    explicit tcp_transport(unique_fd connection) : fd_(std::move(connection)) {}
    const char* name() const noexcept override { return "tcp"; }
    int start(link_start s) override;
    void interrupt() noexcept override;

private:
    unique_fd fd_;
};

}  // namespace csp::net::detail
