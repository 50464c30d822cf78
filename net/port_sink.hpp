#pragma once
// A claimed port whose messages are handed to their owner as they arrive,
// instead of waiting in the port for a process to receive them
// (node::claim with a sink). A layer that sorts a port's messages itself,
// like the collectives' mailbox (matched by source and tag), saves a process
// that would only pass each message on: a channel write and read and two
// switches per message.
//
//   class inbox final : public csp::net::port_sink {
//       void deliver(csp::net::message m) noexcept override { ... }  // never blocks
//   };
//   csp::net::sink_claim claim = node.claim(port_id, "my layer", csp::net::departures::each, sink);
//   ...                      // the claim's end releases the port: no deliver()
//                            // runs or starts after it (keep it after the sink)
//
// The contract, which the node keeps and a sink relies on:
//   - deliver() is called by whichever process of the node delivers to the
//     port (a link's reader, the UCX progress process, the switch, a local
//     send), for one message at a time, under the port's lock, in the order
//     messages reach the port: each peer's in the order it sent them, and an
//     entry that reports a peer's failure or departure (message::failure)
//     after that peer's last message. Messages that reached the port before
//     the claim come first, in order.
//   - The message counts as taken: its sender was credited (port.hpp), and
//     it was not reported to an observer (the owner reports it where a
//     process takes it, report_taken).
//   - deliver() must not block, yield or throw: other deliveries to the port
//     wait for it, and its caller may be a link's reader. A channel write
//     that cannot block (a buffered slot known to be free) is allowed.
//   - When the claim ends, the node asks the sink once which messages may
//     still come that its owner expects and nobody needs
//     (expected_after_release: the messages of a collective call that
//     failed at every rank, say). Those the node drops, crediting their
//     senders and counting them (node_stats::leftovers); every other
//     message that comes waits in the port and is reported as one no
//     process can receive. The filter is called under the port's lock,
//     one message at a time, and may keep state; it must not block.
//   - When the node closes while the claim lasts, after the last deliver(),
//     the node calls node_closed() once (under the port's lock; it must not
//     block either): nothing more can come, so a receive its owner makes
//     from then on, or is waiting in, must fail rather than wait for ever.
#include <functional>
#include <string>

#include "net/message.hpp"

namespace csp::net {

// Which messages that come after a claim ended are expected leftovers.
using leftover_filter = std::function<bool(const message&)>;

class port_sink {
public:
    virtual void deliver(message m) noexcept = 0;
    // Called once as the claim ends, after the last deliver(); none by default.
    virtual leftover_filter expected_after_release() const { return {}; }
    // Called once if the node closes while the claim lasts, after the last
    // deliver(). `node` names it ("job/rank").
    virtual void node_closed(const std::string& node) noexcept { (void)node; }

protected:
    ~port_sink() = default;
};

}  // namespace csp::net
