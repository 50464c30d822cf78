#pragma once
// Error policy of the messaging layer.
//
// - Everything thrown derives from csp::net::net_error (itself a csp::error),
//   with a message naming the node, port, peer or address involved.
// - peer_error: a peer node is unreachable, has died, or broke the protocol.
//   Sends to it throw; every port of this node receives one peer_error, in
//   order after the last message that peer delivered, so receives waiting on
//   it fail instead of hanging. A peer that left cleanly (it closed its node)
//   makes sends to it throw with "... has left"; ports that asked to hear
//   every departure (the collectives' port) receive that error once after its
//   last message, and every port does once no peer is left that could send
//   to it (port.hpp).
// - frame_error: bytes on a connection that are not a valid frame (bad
//   magic, version or opcode, a length over the maximum, a truncated frame,
//   a frame claiming another source). It closes that one connection; the node
//   logs it and delivers it to its ports as a peer_error if the peer had
//   identified itself.
// - decode_error: a message's bytes do not decode as the type asked for. The
//   message is consumed; the port goes on working.
// - nameserver_error: registration or lookup failed (named job, rank, reason).
// - usage_error (from csp/) for wrong arguments: bad rank, bad option value.
// Partial reads and writes, EINTR and EAGAIN are ordinary states, not errors.
#include <string>

#include "csp/error.hpp"

namespace csp::net {

class net_error : public csp::error {
public:
    using csp::error::error;
};

class peer_error : public net_error {
public:
    peer_error(int peer, const std::string& message) : net_error(message), peer_(peer) {}
    // The peer's rank.
    int peer() const noexcept { return peer_; }

private:
    int peer_;
};

class frame_error : public net_error {
public:
    using net_error::net_error;
};

class decode_error : public net_error {
public:
    using net_error::net_error;
};

class nameserver_error : public net_error {
public:
    using net_error::net_error;
};

// A lookup of a rank whose registration ended: it will not come back.
class rank_ended_error : public nameserver_error {
public:
    using nameserver_error::nameserver_error;
};

}  // namespace csp::net
