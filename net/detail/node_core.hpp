#pragma once
// What the processes of one node share: its identity and options, the switch's
// input channel, the port table, and what is known about departed peers.
//
// The processes (see switchboard.hpp for the picture):
//   user processes --send--> switch --frames--> outbound (one per link)
//   inbound (one per link) --messages--> ports;  listener --> greeters --> switch
//   connectors (one per link being set up) --> switch
// Only the switch changes the link table. The port table and the departed
// table are shared with user and inbound processes, under `lock`.
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <atomic>
#include <variant>
#include <vector>

#include "csp/channel.hpp"
#include "csp/runtime_lock.hpp"
#include "csp/spinlock.hpp"
#include "net/detail/flow_control.hpp"
#include "net/detail/landing_table.hpp"
#include "net/sheddable.hpp"
#include "net/frame.hpp"
#include "net/message.hpp"
#include "net/node_options.hpp"
#include "net/port_sink.hpp"
#include "net/socket.hpp"

namespace csp::net::detail {

// One frame on its way out. `control` frames are instructions to the
// outbound process, never written as such.
struct outgoing {
    enum class control : std::uint8_t { none, goodbye, abort };
    header head;
    payload body;
    control ctl = control::none;
    bool notice = false;  // node::send_notice: its loss is no fault
};

// The switch's inputs.
struct send_request {
    int to;
    outgoing frame;
};
struct connector_connected {  // from a connector: the peer accepted, hello and welcome follow
    int peer;
};
struct connect_result {  // from a connector, last
    int peer;
    int fd;              // -1 on failure
    bool duplicate;      // the peer refused because its own connection wins
    std::string error;
    bool retryable;      // the failure may be a stall (a timeout, a refused connect), not an answer
    bool left = false;   // the peer refused because it is closing: it has left, cleanly
};
struct incoming_hello {  // from a greeter: may this connection be the link to `peer`?
    int peer;
    int fd;
    csp::writer<std::string> reply;  // "" accepted (the fd is the switch's), else the refusal
};
struct link_down {  // from an inbound or outbound process
    int peer;
    bool clean;          // the peer said goodbye
    std::string reason;
    std::string farewell{};  // clean: the goodbye's payload (frame.hpp), the job's deadlock report or empty
    // Not clean, and not a failure either: an accepted connection ended
    // before the peer's first frame after the welcome, so the peer's
    // connector had given up on it (it timed out in a stall) and never
    // used it. Reported before any frame of the link's queue was read.
    bool abandoned = false;
};
struct link_process_exited {
    int peer;
};
struct peer_gone {  // from the registration watcher: the nameserver said its registration ended
    int peer;
};
struct job_deadlock {  // from the registration watcher: the nameserver found the job deadlocked
    std::string report;
};
struct close_request {
    csp::writer<bool> done;
};
struct flow_signal {  // from a port or an inbound process: a credit frame to send
    int peer;
    std::uint64_t credit;  // bytes credited; 0: ask the peer for credit
};
using switch_input = std::variant<send_request, connector_connected, connect_result, incoming_hello, link_down,
                                  link_process_exited, peer_gone, job_deadlock, close_request, flow_signal>;

class ucx_worker;
struct ucx_look;  // ucx_transport.hpp

// What the node's UCX progress process (ucx_transport.hpp) tells a UCX link's
// liveness process: the peer's goodbye arrived over UCX, or why its stream
// cannot go on.
struct ucx_tidings {
    bool goodbye = false;
    std::string text;  // a goodbye's payload (frame.hpp), or the fault
};
using ucx_news = csp::channel<ucx_tidings>;

// Why a message a send() accepted never left (node_core::not_sent).
enum class unsent_reason : std::uint8_t {
    link_ended,      // it reached the switch after its link had ended
    over_max_frame,  // queued before the link, over the peer's max_frame
};

struct node_core;

// Where the messages of one port go: its channel, which ports (port.hpp)
// read, or the sink of the layer that claimed it with one (port_sink.hpp).
// Every delivery to the port passes through deliver(), so the sink's
// contract holds: one message at a time, in order, never after release.
// Made on first use by either side, and kept for the node's life (cached by
// deliverers).
struct port_entry {
    port_entry(port_id id, int rank)
        : channel(port_text(id) + " of node " + std::to_string(rank), csp::buffer::unbounded()),
          writer(channel.writer()) {}

    // m into the sink, credited first (port_sink.hpp), or into the channel
    // (unbounded: never blocks). node.cpp.
    void deliver(node_core& core, message m);

    csp::channel<message> channel;
    const csp::writer<message> writer;
    // Held across a delivery, and while a claim or release moves the sink;
    // nothing under it suspends (port_sink.hpp), so it is a runtime lock.
    csp::runtime_lock<csp::spinlock> lock{csp::runtime_lock<csp::spinlock>::needed_here()};
    port_sink* sink = nullptr;  // under `lock`
    // What the last sink expected to come after its claim ended (under `lock`;
    // empty while a sink or a process owns the port).
    leftover_filter leftovers;
    // Failure entries (a peer's departure or loss) put into the channel: in
    // a port nobody reads, the rest of what it holds is messages.
    std::atomic<std::size_t> notices{0};
};

struct node_core {
    // Credit frames and asks go to the switch, which queues them on the link.
    // Made by a process of the node's runtime (node's constructor).
    explicit node_core(std::uint32_t window = node_options{}.window)
        : flow(
              window,
              [this](int peer, std::uint64_t bytes) {
                  try {
                      traffic_out.fetch_add(bytes ? bytes : 1, std::memory_order_relaxed);
                      to_switch.writer().write(flow_signal{peer, bytes});
                  } catch (const csp::error&) {
                      // the node is closing: no credit is needed any more
                  }
              },
              csp::runtime_lock<csp::spinlock>::needed_here()) {}

    node_options options;
    // The system's TCP congestion control, for links to other hosts
    // (node_options::local_congestion; "" if unknown).
    std::string usual_congestion;
    int rank = -1;
    int size = 0;
    endpoint address;  // where this node's listener is

    csp::channel<switch_input> to_switch{"switch", csp::buffer::unbounded(), csp::sharing::any_to_one};
    // Poisoned when the switch has handled its last input (the node closed
    // and every link settled): ends the listener, the registration watcher
    // and greeters still waiting for a verdict, which now will not come.
    // Not at close itself: until its links settle a closing node may still
    // accept a peer it has messages for (handshake.cpp).
    csp::channel<bool> stop{"stop"};
    // Poisoned when a closing node's linger ran out: connectors of links
    // still being set up give up their waits (handshake.cpp).
    csp::channel<bool> give_up{"give up"};

    mutable std::mutex lock;
    std::unordered_map<port_id, std::shared_ptr<port_entry>> ports;
    std::unordered_map<int, std::string> departed;  // peer -> why sends to it fail
    std::unordered_set<port_id> every_departure;      // ports opened with departures::each
    std::unordered_map<port_id, std::string> claimed;  // port -> the layer that owns it (node::claim)
    std::unordered_map<port_id, std::string> released;  // port -> the layer that owned it and let it go
    std::unordered_set<port_id> opened;                // ports the program opened (node::open)
    // departed.size(), readable without the lock: a send looks up `departed`
    // only once some peer has gone, so the common send takes no lock.
    std::atomic<std::size_t> departures{0};
    // The error of the last peer to depart once every other rank of the job
    // has (left, died or gone) while this node was open: no node is left
    // that could send to it, so a port found empty fails with it from then
    // on (port.hpp), as a channel whose writers all retired. Set once, by
    // the switch, after `departed` has its entry and before the ports are
    // told; under `lock`, and `all_departed` says it is set without it.
    std::shared_ptr<const peer_error> no_sender_left;
    std::atomic<bool> all_departed{false};
    // The last max_faults_kept faults logged, oldest first, and how many
    // there were in all: a stranger who connects and disconnects in a loop
    // cannot grow the node's memory.
    static constexpr std::size_t max_faults_kept = 256;
    std::deque<std::string> faults;
    std::size_t faults_total = 0;
    // The node's UCX worker, or null when its links use TCP only; the
    // worker wakes its progress process through ucx_poke (see the
    // ucx_worker constructor).
    std::shared_ptr<ucx_worker> ucx;
    csp::channel<bool> ucx_poke{"ucx poke", csp::buffer::overwriting(1)};
    std::unordered_map<int, ucx_news> ucx_links;  // peer -> its link's news, under `lock`
    // Liveness processes of UCX links whose connection ended without the
    // peer's flush marker, each waiting for the progress process to take
    // in what the worker holds (ucx_transport.cpp: drain_for_liveness).
    // The list is under `lock`; the flag is set after a request is added and
    // cleared before the list is taken, so no request is left unanswered.
    std::vector<csp::writer<bool>> ucx_drains;
    std::atomic<bool> ucx_drain_wanted{false};
    // With one worker thread on a host that is not oversubscribed, a process
    // that receives from an empty port polls the worker itself for a while
    // before it blocks (poll_port, ucx_transport.hpp), as an MPI rank polls
    // inside MPI_Recv: its message then skips the hand-over from the
    // progress process (a channel write, a wake-up and a switch).
    bool receivers_poll = false;
    // What a look at the worker took in and the ports it goes to: one set,
    // used in turn by the progress process and by polling receivers. A
    // hand-out can block (a goodbye told to its link's liveness process);
    // while one is under way (handing_out) nobody else looks, or a later
    // frame of a peer could overtake the rest of the batch. Both are only
    // used with receivers_poll, that is, by one thread.
    std::shared_ptr<ucx_look> look;
    bool handing_out = false;
    int pollers = 0;                   // receivers polling now: the progress process stands aside
    std::atomic<std::size_t> links_over_ucx{0};
    std::atomic<std::size_t> links_over_tcp{0};  // of a node with UCX: links that chose TCP
    sheddable greeting;  // connections still in their handshake (own lock; never taken under `lock`)
    flow_control flow;   // bytes in flight per peer (own lock; never taken under `lock`)

    // What this node put on its way to a port or a peer, and what reached
    // it, for the job-wide deadlock detector (deadlock_waves.hpp): messages
    // (one each, also to itself), credit (its bytes) and asks for credit
    // (one each). Summed over the job, out equals in exactly when nothing
    // is in flight; each kind's out can only lead its in. Relaxed.
    std::atomic<std::uint64_t> traffic_out{0};
    std::atomic<std::uint64_t> traffic_in{0};

    // The next observed data frame's sequence (frame.hpp): 1..65535,
    // cyclically, unique among any 65,535 consecutive observed sends.
    std::uint16_t next_sequence() noexcept {
        return static_cast<std::uint16_t>(1 + sequences.fetch_add(1, std::memory_order_relaxed) % 65535);
    }
    std::atomic<std::uint32_t> sequences{0};

    // Counters for node::stats() (relaxed).
    std::atomic<std::size_t> links_up{0};
    std::atomic<std::size_t> links_made{0};      // by connecting
    std::atomic<std::size_t> links_accepted{0};  // by accepting
    std::atomic<std::size_t> duplicates{0};      // connections refused as the losing half of a crossing
    std::atomic<std::size_t> abandoned{0};       // accepted connections the peer gave up on before using them
    std::atomic<std::size_t> sent_direct{0};     // data frames that bypassed the switch
    std::atomic<std::size_t> taken_polling{0};   // messages a polling receiver took from the worker (poll_port)
    std::atomic<std::size_t> late_wakeups{0};    // node_stats::late_wakeups
    std::atomic<std::size_t> leftovers{0};       // node_stats::leftovers
    std::atomic<std::size_t> unsent{0};          // node_stats::unsent (not_sent)
    // Per (peer, reason), how many messages not_sent counted: under `lock`.
    std::map<std::pair<int, unsent_reason>, std::size_t> unsent_by_reason;
    // Buffers receivers named for their messages, for the TCP links' readers
    // (landing.hpp; the UCX worker keeps its own, under its lock).
    landing_table landings;

    // Port `id`'s entry, made on first use by either side (a message may
    // arrive before its port is opened; it waits in the channel).
    // The node closed: every port's channel loses its writer (node.cpp).
    void retire_ports();

    std::shared_ptr<port_entry> port_entry_of(port_id id) {
        std::lock_guard lk(lock);
        auto it = ports.find(id);
        if (it == ports.end()) it = ports.emplace(id, std::make_shared<port_entry>(id, rank)).first;
        return it->second;
    }

    // What waits in ports that no process can receive from (the program
    // never opened them, no layer owns them): messages sent to a wrong port
    // id end there, and so do messages that came after the layer that owned
    // the port let it go (a peer still using a communicator this node had
    // closed). One line per such port, for the job-wide deadlock report and
    // the log at close. (Lock order: this lock, then a port channel's.)
    std::vector<std::string> unopened_ports_with_messages() {
        std::vector<std::string> out;
        std::lock_guard lk(lock);
        for (const auto& [id, entry] : ports) {
            if (opened.count(id) || claimed.count(id)) continue;
            const std::size_t held = entry->channel.buffered(),
                              notices = entry->notices.load(std::memory_order_relaxed);
            const std::size_t n = held > notices ? held - notices : 0;
            if (n == 0) continue;
            std::string why = "no process opened the port (sent to the wrong port?)";
            if (auto was = released.find(id); was != released.end())
                why = was->second + " owned the port and was done with it before " + (n == 1 ? "it" : "they") +
                      " came (a peer went on using it: one call more than this node made?)";
            out.push_back(port_text(id) + " of node " + std::to_string(rank) + " holds " + std::to_string(n) +
                          (n == 1 ? " message" : " messages") + " that no process can receive: " + why);
        }
        return out;
    }

    // The ports' entries messages arrive for, kept by a process that
    // delivers a link's messages (a transport's receiving side), so that the
    // port table's lock is taken once per port, not once per message.
    class port_writers {
    public:
        explicit port_writers(node_core& core) : core_(core) {}
        void deliver(message m) {
            auto it = entries_.find(m.port);
            if (it == entries_.end()) it = entries_.emplace(m.port, core_.port_entry_of(m.port)).first;
            it->second->deliver(core_, std::move(m));
            core_.traffic_in.fetch_add(1, std::memory_order_relaxed);
        }

    private:
        node_core& core_;
        std::unordered_map<port_id, std::shared_ptr<port_entry>> entries_;
    };

    std::string name() const { return options.job + "/" + std::to_string(rank); }
    link_limits limits() const { return {options.max_frame, options.window}; }
    std::string peer_name(int peer) const { return "node " + std::to_string(peer) + " of job '" + options.job + "'"; }

    // Logs a handled fault and keeps it for faults().
    void fault(const std::string& what) {
        {
            std::lock_guard lk(lock);
            ++faults_total;
            faults.push_back(what);
            if (faults.size() > max_faults_kept) faults.pop_front();
        }
        log_fault(what);
    }
    void log_fault(const std::string& what) const;

    // A message a send() accepted that will never leave: counted in
    // node_stats::unsent; `line` (what was not sent, and why) is logged only
    // for the first to `peer` for `why`, so a burst cannot flood the fault
    // log and push the cause out of faults(). sum_up_unsent logs the rest,
    // one line per peer and reason, when the node closes.
    void not_sent(int peer, unsent_reason why, const std::string& line) {
        unsent.fetch_add(1, std::memory_order_relaxed);
        bool first;
        {
            std::lock_guard lk(lock);
            first = ++unsent_by_reason[{peer, why}] == 1;
        }
        if (first) fault(line + " (any more are counted in node_stats::unsent and summed up when this node closes)");
    }
    void sum_up_unsent() {
        std::map<std::pair<int, unsent_reason>, std::size_t> counted;
        {
            std::lock_guard lk(lock);
            counted = unsent_by_reason;
        }
        for (const auto& [at, n] : counted)
            if (n > 1)
                fault(std::to_string(n - 1) + " more messages to " + peer_name(at.first) +
                      " were not sent after the first: " +
                      (at.second == unsent_reason::link_ended
                           ? "sent before their senders could know its link had ended"
                           : "over its max_frame"));
    }
};

}  // namespace csp::net::detail
