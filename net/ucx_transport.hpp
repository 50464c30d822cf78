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
// progress  one per node: the one that receives. It waits on the
//           worker's event fd through the IO scheduler (no thread of its own;
//           an idle node sleeps in the same poll as everything else, after
//           the scheduler's spin), progresses the worker, and delivers each
//           peer's frames in order: data into ports, credit and asks to the
//           flow control, a goodbye or a broken stream to that link's
//           liveness process (node_core::ucx_links). With one worker thread
//           a process waiting on an empty port does the same while it waits
//           (poll_port), and takes its own message straight from the frame.
// outbound  one per link: sends the link's queue over UCX (what was sent
//           before the link was up, credit frames, and any message while
//           one of those is still queued; other messages go to UCX from
//           their sending process, ucx_worker::send_direct); on goodbye it
//           sends the goodbye frame behind every frame before it, waits
//           until UCX has flushed them all, then writes the flush marker on
//           the TCP connection and shuts its sending side, which the peer
//           reads as the end.
// liveness  one per link: reports the link's end (transport.hpp), once: the
//           end of the TCP connection after the peer's goodbye came over UCX
//           is clean; an end without it (killed, crashed), other bytes on
//           the connection, or a broken UCX stream is not.
//
// A peer's goodbye leaves it before its marker, so an end of connection
// after the marker waits up to goodbye_grace for the goodbye to be taken in.
// An end without the marker is a death, known at once; before it is
// reported, the progress process takes in what the worker holds, so every
// message the peer sent before it died reaches its port ahead of the loss,
// as over TCP.
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "csp/channel.hpp"
#include "net/detail/node_core.hpp"
#include "net/ucx_worker.hpp"

namespace csp::net::detail {

inline constexpr std::chrono::milliseconds goodbye_grace{2000};

// What one look at the worker took in, and the writers of the ports its
// messages go to (node_core::look). Made by a process of the node's runtime.
struct ucx_look {
    explicit ucx_look(node_core& core);
    ~ucx_look();
    ucx_look(const ucx_look&) = delete;
    ucx_look& operator=(const ucx_look&) = delete;

    std::vector<std::pair<int, ucx_worker::frame>> frames;
    std::vector<std::pair<int, std::string>> faults;
    node_core::port_writers ports;

    // Nodes of this runtime that have a look. Receivers poll only while
    // their node is the only one: nodes that share the runtime's thread
    // would each poll for a message the other has not had the thread to
    // send.
    std::shared_ptr<std::atomic<int>> runtime_nodes;
};

// A process receiving from `port`, whose channel `ch` is empty, polls the
// node's worker (node_core::receivers_poll) until a message for the port
// comes, which it returns without the channel when the channel is still
// empty then; or until the channel holds one, the poll has gone on for
// ucx_spin, the node's other processes have work, or the node stops:
// nullopt, and the caller reads the channel. Frames for other ports go to
// their channels, in order, as the progress process would hand them out.
std::optional<message> poll_port(node_core& core, port_id port, const csp::channel<message>& ch);

// Until the node's stop channel is poisoned.
void run_ucx_progress(std::shared_ptr<node_core> core);

void run_ucx_liveness(std::shared_ptr<node_core> core, int peer, int fd, csp::reader<ucx_tidings> news);

// `interrupted` is poisoned by the transport's interrupt().
void run_ucx_outbound(std::shared_ptr<node_core> core, int peer, int fd, csp::reader<outgoing> queue,
                      csp::reader<bool> interrupted);

}  // namespace csp::net::detail
