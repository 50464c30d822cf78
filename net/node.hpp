#pragma once
// A node: this OS process's place in a job (an MPI rank's equivalent).
//
//   csp::run([] {
//       csp::net::node self;                          // job, rank, peers from the environment
//       csp::net::port inbox = self.open(1);
//       self.send((self.rank() + 1) % self.size(), 1, std::vector<double>{1, 2, 3});
//       auto v = inbox.receive<std::vector<double>>();
//   });
//
// send() never waits for the network: the message is queued for the link to
// its destination (set up on first use) and send returns. It waits only when
// the destination has not yet taken the messages already sent to it, up to
// the window (node_options::window, flow_control.hpp); try_send() answers
// window_full instead. Messages from one node to one port arrive in the
// order sent. A node must be made and used by
// processes of one runtime; close() (or the destructor) delivers everything
// already sent, says goodbye to every peer, and leaves the nameserver.
//
// Invariants
//  1. The switch process is the only one that changes links; node methods
//     talk to it through its input channel (switchboard.hpp).
//  2. A peer's departure is recorded before any port hears of it, so a
//     process that took a peer_error from a port finds sends to that peer
//     refused too.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "csp/process_group.hpp"
#include "net/codec.hpp"
#include "net/endpoint.hpp"
#include "net/landing.hpp"
#include "net/node_options.hpp"
#include "net/port.hpp"
#include "net/port_sink.hpp"

namespace csp::model {
class timeline;
}

namespace csp::net {

namespace detail {
// What a node shares with its switch and link processes (detail/node_core.hpp,
// kept out of this header: a user's file need not compile it).
struct node_core;
}  // namespace detail

enum class send_status : std::uint8_t { sent, window_full };

struct node_stats {
    std::size_t links = 0;           // connections up now
    std::size_t links_over_ucx = 0;  // links whose frames went over UCX, ever (ucx_transport.hpp)
    std::size_t connected = 0;       // links this node set up
    std::size_t accepted = 0;        // links a peer set up
    std::size_t duplicates = 0;      // crossing connections refused in favour of ours
    std::size_t faults = 0;          // faults handled in all (faults() keeps the last 256)
    std::size_t sent_direct = 0;     // messages a sending process gave UCX itself (ucx_worker::send_direct)
    // Frames UCX could not send at once and finished later (a request kept
    // until done): large ones (by rendezvous from 64 KiB), and small ones
    // whose queue to the peer stayed full while the worker was polled a few
    // times (a receiver that is not running; ucx_worker.cpp).
    std::size_t sent_queued = 0;
    // Small frames UCX refused at first because its queue to the peer was
    // full (or held a frame queued before them): each was offered again
    // while the worker was polled a few times, and queued only if still
    // refused. A measure of how often senders outran their receivers.
    std::size_t found_queue_full = 0;
    std::size_t landed = 0;          // payloads received into a receiver's own buffer, over UCX or TCP (landing.hpp)
    std::size_t held = 0;            // large payloads over UCX waiting now for a landing announced by expect()
    std::size_t taken_polling = 0;   // messages a receiving process took from UCX itself while it waited (port.hpp)
    // Looks of the UCX progress process, woken by its sleep's limit and not
    // by UCX's event fd, that found messages: each a wake-up the fd did not
    // give (net/ucx_transport.cpp, armed_sleep); they came late, not never.
    std::size_t late_wakeups = 0;
    // Messages that came for a port after its owner let it go, which that
    // owner said it expected (port_sink::expected_after_release: those of a
    // collective call that failed at every rank): dropped, their senders
    // credited.
    std::size_t leftovers = 0;
    // Data messages a send() accepted that never left: queued for a peer
    // whose link ended (lost, or it left) before they went out, on their way
    // to the link when it ended (sent before the sender could know), or over
    // the peer's max_frame once it was known. Each link's first such
    // message is logged as a fault; the rest are counted here.
    std::size_t unsent = 0;
    // Connections this node accepted and welcomed that the peer gave up on
    // before its first frame (its connector timed out during a stall of
    // this node): the link waited for the peer's next one, losing nothing.
    std::size_t abandoned = 0;
};

class sink_claim;

class node {
public:
    explicit node(node_options options = node_options::from_environment());
    ~node();
    node(const node&) = delete;
    node& operator=(const node&) = delete;

    int rank() const noexcept { return rank_; }
    int size() const noexcept { return size_; }
    const std::string& job() const noexcept;
    // Whether every rank of the job runs on this host (node_options::
    // local_size) and this node links over UCX: its messages go through
    // shared memory, which the collectives' table tells from a network.
    bool shares_host_memory() const noexcept;
    // Whether this node's links to nodes of its own host go through shared
    // memory (it links over UCX): ranks known to share a host (a
    // hierarchy's host groups) may then meet in shared memory too.
    bool host_links_share_memory() const noexcept;
    // Whether more ranks of the job run on this host than it has hardware
    // threads (node_options::oversubscribed): then a waiting rank gives up
    // its core at every look.
    bool host_oversubscribed() const noexcept;
    // Whether every rank of the job runs on this host (local_size) and they
    // outnumber its CPUs: the same answer at every rank where the launcher
    // gave them all the same CSP_LOCAL_SIZE and CSP_LOCAL_CPUS, as
    // csp-launch does. A job over several hosts, or one whose placement is
    // unknown, is not: only a job wholly here is known alike everywhere.
    // The collectives' table (selection.hpp) keys rules on it.
    bool job_oversubscribed() const noexcept;
    // Whether a message to this node may come over a TCP link, which the IO
    // scheduler's poll takes in (so a process that computes for long should
    // call csp::yield_to_io() between steps); false once every link is over
    // UCX, whose progress process takes messages in while the node computes
    // (net/ucx_transport.cpp). True before the first link is up, and for
    // good once one link chose TCP.
    bool receives_through_io() const noexcept;
    // Where this node accepts connections.
    endpoint address() const;

    // The port `id` of this node; messages sent to it before it was opened are
    // waiting in it. Opening a port twice gives two handles to one mailbox;
    // it hears every departure once any handle asked for `each` (port.hpp).
    // Throws usage_error for a port a library layer claimed.
    port open(port_id id, departures heard = departures::last_sender);

    // For layers above the node that own a port (a net_communicator owns
    // its own): opens `id` and reserves it for `owner` until release(id), so
    // a user's open() or a second claim of it is a usage_error naming the
    // owner, not two readers silently splitting one stream of messages.
    port claim(port_id id, const std::string& owner, departures heard = departures::last_sender);
    // claim() for a layer that takes the port's messages as they arrive:
    // each is handed to `sink` (port_sink.hpp); messages waiting in the port
    // come first. No port is made: the claim lasts as long as the returned
    // handle, whose end releases it, so keep the handle where the sink's
    // owner cannot outlive it (a member declared after the sink).
    [[nodiscard]] sink_claim claim(port_id id, const std::string& owner, departures heard, port_sink& sink);
    // Ends a claim: after it returns no sink call runs or starts, and later
    // messages wait in the port.
    void release(port_id id);

    // Queues `value` for port `to_port` of node `to` and returns; waits
    // first while the window to `to` is full. Throws usage_error for a rank
    // outside the job, a message over this node's or the peer's max_frame
    // (the link goes on) or a closed node, and peer_error if that node has
    // left or failed (also when that happens while the send waits).
    template <class T>
    void send(int to, port_id to_port, T&& value, std::uint64_t tag = 0) {
        const std::uint32_t type = wire_type<T>();
        post(to, to_port, tag, encode(std::forward<T>(value)), type, true);
    }
    // send() of a notice whose loss is no fault (a collective's revocation:
    // a rank that has gone needs no telling): to a node that has left or
    // been lost it sends nothing and throws nothing, and when the link to
    // that node fails before it went, it is dropped without a logged line.
    // The other send() errors stand.
    template <class T>
    void send_notice(int to, port_id to_port, T&& value, std::uint64_t tag = 0) {
        const std::uint32_t type = wire_type<T>();
        post(to, to_port, tag, encode(std::forward<T>(value)), type, true, true);
    }
    // send() that never waits: window_full, sending nothing, when the window
    // to `to` is full (or other sends wait for it). The same errors.
    template <class T>
    send_status try_send(int to, port_id to_port, const T& value, std::uint64_t tag = 0) {
        return post(to, to_port, tag, encode(value), wire_type<T>(), false);
    }

    // Sends a received message on to port `to_port` of node `to`, as it
    // arrived: its bytes are shared with `m`, neither copied nor decoded, and
    // it keeps the type it was sent as. For a process that routes or relays
    // (a ring, a chain, a tree) without looking inside. The send() errors,
    // and usage_error for an entry that reports a peer's failure.
    void forward(int to, port_id to_port, const message& m, std::uint64_t tag);

    // Puts a message from this node straight into its own port `to_port`,
    // as send() to self does. Works on a closed node too: it is how a
    // process waiting on a port is woken.
    template <class T>
    void deliver_here(port_id to_port, T&& value, std::uint64_t tag = 0) {
        const std::uint32_t type = wire_type<T>();
        deliver_encoded_here(to_port, tag, encode(std::forward<T>(value)), type);
    }

    // A buffer of the caller's for the one message from node `from` to port
    // `to_port` with `tag`, a std::vector<E> or a span of E (landing.hpp).
    template <class E>
    landing land(int from, port_id to_port, std::uint64_t tag, std::span<E> into) {
        return land_bytes(from, to_port, tag, reinterpret_cast<std::byte*>(into.data()), into.size_bytes(),
                          type_fingerprint<std::vector<std::remove_cv_t<E>>>());
    }
    // Says that the message from `from` to `to_port` with `tag` will be
    // landed (land()), though its buffer cannot be named yet; over UCX, a
    // large one that comes first waits for its buffer instead of being
    // received into a block of its own and copied (landing.hpp). `bytes`:
    // the size of that buffer, if known (a message fitting a small one is
    // never held, and then nothing is recorded). Ending the returned handle
    // withdraws the expectation; the landing, if one was made, ends by its
    // own handle.
    landing expect(int from, port_id to_port, std::uint64_t tag,
                   std::size_t bytes = std::numeric_limits<std::size_t>::max());

    // Delivers what was sent, says goodbye, leaves. Idempotent.
    void close();

    // The last 256 faults this node handled and logged (refused connections,
    // malformed frames, lost peers), oldest first; stats().faults counts all.
    std::vector<std::string> faults() const;
    node_stats stats() const;

private:
    send_status post(int to, port_id to_port, std::uint64_t tag, payload body, std::uint32_t type, bool wait,
                     bool notice = false);
    void deliver_encoded_here(port_id to_port, std::uint64_t tag, payload body, std::uint32_t type);
    // The checks and bookkeeping of both claims.
    void reserve(port_id id, const std::string& owner, departures heard);
    landing land_bytes(int from, port_id to_port, std::uint64_t tag, std::byte* at, std::size_t bytes,
                       std::uint32_t type);

    std::shared_ptr<detail::node_core> core_;
    // The core's rank and size, fixed once the constructor has registered:
    // kept here too so that the collectives' per-message rank checks are
    // inline loads.
    int rank_ = -1;
    int size_ = 0;
    // The switch's input (node.cpp): sends, connects and the close request.
    struct switch_end;
    std::unique_ptr<switch_end> to_switch_;
    // Makes the UCX worker and starts its progress process, unless
    // `transport` is tcp; automatic falls back to TCP if UCX cannot start.
    void start_ucx(transport_kind transport);

    // node_options::trace: written by close().
    void write_timeline();
    std::unique_ptr<csp::model::timeline> timeline_;

    csp::process_group switch_;  // the switch process (and UCX progress), joined by close()
    bool closed_ = false;
};

// A claim of a port with a sink (node::claim): released when it ends, so the
// sink is handed nothing once it is gone. Neither copied nor moved: it stays
// beside the sink whose claim it is.
class sink_claim {
public:
    sink_claim(const sink_claim&) = delete;
    sink_claim& operator=(const sink_claim&) = delete;
    ~sink_claim() { node_->release(id_); }

private:
    friend class node;
    sink_claim(node& n, port_id id) : node_(&n), id_(id) {}

    node* node_;
    port_id id_;
};

}  // namespace csp::net
