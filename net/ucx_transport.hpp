#pragma once
// The UCX side of a link (transport.hpp): frames over the node's UCX worker
// (ucx_worker.hpp), shared memory between nodes of one host, InfiniBand or
// RoCE (verbs) or TCP between hosts, whatever UCX finds.
//
// Set-up and security stay with TCP. The connection that passed the
// handshake carries each side's `transports` frame (frame.hpp: its UCX
// worker address, or nothing), so an address is only ever given to a node
// that proved the job's token, and nothing is sent over UCX before that.
// The connection then stays open as the liveness channel and carries
// nothing more: the peer's death or departure reaches the node exactly as
// over TCP.
//
// Three kinds of process:
// progress  one per node: the only one that receives. It waits on the
//           worker's event fd through the IO scheduler (no thread of its own;
//           an idle node sleeps in the same poll as everything else, after
//           the scheduler's spin), progresses the worker, and delivers each
//           peer's frames in order: data into ports, credit and asks to the
//           flow control, a goodbye or a broken stream to that link's
//           liveness process (node_core::ucx_links).
// outbound  one per link: sends the link's queue over UCX (what was sent
//           before the link was up, credit frames, and any message while
//           one of those is still queued; other messages go to UCX from
//           their sending process, ucx_worker::send_direct); on goodbye it
//           sends the goodbye frame behind every frame before it, waits
//           until UCX has flushed them all, then shuts the TCP connection's
//           sending side, which the peer reads as the end.
// liveness  one per link: reports the link's end (transport.hpp), once: the
//           end of the TCP connection after the peer's goodbye came over UCX
//           is clean; an end without it (killed, crashed), bytes on the
//           connection, or a broken UCX stream is not.
//
// A peer's goodbye is sent before its TCP shutdown, and UCX keeps one
// sender's frames in order, so the goodbye normally arrives first; an end of
// connection seen first waits up to goodbye_grace for it.
#include <chrono>
#include <memory>

#include "csp/channel.hpp"
#include "net/detail/node_core.hpp"

namespace csp::net::detail {

inline constexpr std::chrono::milliseconds goodbye_grace{2000};

// Until the node's stop channel is poisoned.
void run_ucx_progress(std::shared_ptr<node_core> core);

void run_ucx_liveness(std::shared_ptr<node_core> core, int peer, int fd, csp::reader<std::string> news);

// `interrupted` is poisoned by the transport's interrupt().
void run_ucx_outbound(std::shared_ptr<node_core> core, int peer, int fd, csp::reader<outgoing> queue,
                      csp::reader<bool> interrupted);

}  // namespace csp::net::detail
