#pragma once
// What carries a link's frames once its connection is set up (link.hpp).
//
// A transport starts the processes that move frames both ways: they read the
// link's outbound queue and write its frames to the peer, and deliver the
// peer's data frames, in order, into their ports' channels. Their contract
// with the switch, whatever the medium:
//   - each reports the link's end at most once, as link_down: clean when the
//     peer's goodbye arrived, otherwise with the reason, in words a user can
//     act on; abandoned when an accepted connection ended before the peer
//     sent anything after the welcome (its connector gave up on it), which
//     is allowed only while nothing of the queue has been read;
//   - an outgoing frame with control::goodbye (its header and payload made
//     by link::drain) is sent after every frame queued before it, and ends
//     the sending side;
//     control::abort ends it at once without sending anything more;
//   - after interrupt() every process exits soon, sending nothing more;
//   - each reports link_process_exited as its very last act, and nothing of
//     the transport is used after the last one did.
// Adding a transport: one file implementing this interface, and one line in
// make_transport (transport.cpp), the place that picks one per link.
#include <memory>
#include <optional>
#include <string>

#include "csp/channel.hpp"
#include "csp/process_group.hpp"
#include "iosched/io_error.hpp"
#include "net/detail/node_core.hpp"

namespace csp::net::detail {

// What a transport gets when its link comes up.
struct link_start {
    std::shared_ptr<node_core> core;
    int peer;
    csp::process_group& group;         // the node's network processes; spawn daemons here
    csp::reader<outgoing> queue;       // the link's outbound queue
    std::optional<outgoing> first;     // sent before anything in the queue (the welcome)
};

class transport {
public:
    virtual ~transport() = default;
    virtual const char* name() const noexcept = 0;
    // Starts the transport's processes; returns how many there are (each
    // reports link_process_exited once).
    virtual int start(link_start s) = 0;
    // Makes every process of the transport exit soon. Called by the switch
    // only, at most once the link is lost or forced closed; idempotent.
    virtual void interrupt() noexcept = 0;
};

// The transport for a connection to `peer` that passed its handshake on
// `connection`. Takes the connection.
std::unique_ptr<transport> make_transport(const node_core& core, int peer, unique_fd connection);

// Why a link's connection ended without the peer's goodbye, in words a user
// can act on. `error`: the errno of the read, write or wait that met the
// end; 0 for an end of file. A reset is how a killed peer's socket closes
// when bytes sent to it were still unread, so it reads as a death too.
std::string connection_lost(int error);
// The same for a failed wait or transfer of the IO scheduler: its errno in
// those words, or its own text when it carries none.
std::string connection_lost(const csp::io::io_error& e);

// A data frame queued before the handshake told this node the peer's
// max_frame (send() refuses one afterwards) that is over it: counted (the
// first to each peer reported as a fault), its window credit returned, and
// true (the caller drops it and the link goes on). `peer_max_frame` 0: not
// known.
bool dropped_over_peer_max_frame(node_core& core, int peer, std::uint32_t peer_max_frame, const outgoing& f);

}  // namespace csp::net::detail
