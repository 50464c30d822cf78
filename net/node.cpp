#include "net/node.hpp"

#include <fcntl.h>
#include <malloc.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>

#include <limits>
#include <mutex>
#include <thread>

#include "csp/config.hpp"
#include "csp/deadline_after.hpp"
#include "csp/model/timeline.hpp"
#include "csp/observer.hpp"
#include "csp/process.hpp"
#include "iosched/scheduler.hpp"
#include "net/detail/node_core.hpp"
#include "net/log.hpp"
#include "net/nameserver_client.hpp"
#include "net/nameserver_protocol.hpp"
#include "net/switchboard.hpp"
#include "net/transport.hpp"
#if CSP_WITH_UCX
#include "net/ucx_transport.hpp"
#include "net/ucx_worker.hpp"
#endif

namespace csp::net {

struct node::switch_end {
    csp::writer<detail::switch_input> w;
};

namespace detail {
void node_core::log_fault(const std::string& what) const { log_line("csp.net " + name() + ": " + what); }
}  // namespace detail

namespace {

// The first of `names` that is set, as a whole number >= least (its own
// name in the error otherwise), or `fallback`.
int env_int(std::initializer_list<const char*> names, int fallback, int least = 0) {
    for (const char* n : names)
        if (auto v = csp::config::number(n, least, std::numeric_limits<int>::max())) return static_cast<int>(*v);
    return fallback;
}

// CSP_LAUNCHER_FD's "fd:inode" as the descriptor, if it is that pipe (see
// node_options::launcher_fd); else -1. The descriptor is kept from programs
// this one starts: the variable they inherit then names nothing of theirs.
int launcher_pipe(const std::string& text) {
    int fd = -1;
    unsigned long long inode = 0;
    char end = 0;
    if (std::sscanf(text.c_str(), "%d:%llu%c", &fd, &inode, &end) != 2 || fd < 0)
        throw usage_error("CSP_LAUNCHER_FD=\"" + text + "\" is not valid: it must be fd:inode (csp-launch sets it)");
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode) || static_cast<unsigned long long>(st.st_ino) != inode)
        return -1;
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
}

// node_options::transport, else CSP_TRANSPORT, else automatic.
transport_kind transport_of(const node_options& o) {
    if (o.transport) return *o.transport;
    const auto t = csp::config::text("CSP_TRANSPORT");
    if (!t || *t == "auto") return transport_kind::automatic;
    if (*t == "tcp") return transport_kind::tcp;
    if (*t == "ucx") return transport_kind::ucx;
    throw usage_error("CSP_TRANSPORT='" + *t + "': use auto, tcp or ucx");
}

}  // namespace

namespace {

// The CPUs this process may run on (node_options::local_cpus). Read once:
// glibc reads a sysfs file for hardware_concurrency at every call (an open
// and a read, microseconds), and the collectives ask at every call on a
// host board.
int cpus_of_this_process() noexcept {
    static const int cpus = [] {
        cpu_set_t mask;
        CPU_ZERO(&mask);
        if (::sched_getaffinity(0, sizeof mask, &mask) == 0 && CPU_COUNT(&mask) > 1) return CPU_COUNT(&mask);
        return static_cast<int>(std::thread::hardware_concurrency());
    }();
    return cpus;
}

}  // namespace

bool node_options::oversubscribed() const noexcept {
    const int cpus = local_cpus > 0 ? local_cpus : cpus_of_this_process();
    return cpus > 0 && local_size > cpus;
}

node_options::node_options() = default;

node_options node_options::from_environment() {
    node_options o;
    o.rank = env_int({"CSP_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}, -1);
    o.size = env_int({"CSP_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}, 0, 1);
    using csp::config::text;
    if (auto j = text("CSP_JOB")) o.job = *j;
    else if (auto s = text("SLURM_JOB_ID")) o.job = "slurm-" + *s + "." + text("SLURM_STEP_ID").value_or("0");
    if (auto ns = text("CSP_NAMESERVER")) o.nameserver = endpoint::parse(*ns);
    if (auto t = text("CSP_TOKEN")) o.token = *t;
    if (auto b = text("CSP_BIND")) o.bind = b->find(':') == std::string::npos ? endpoint{*b, 0} : endpoint::parse(*b);
    if (auto a = text("CSP_ADVERTISE")) o.advertise = *a;
    if (auto m = csp::config::number("CSP_MAX_FRAME", 0, std::numeric_limits<std::uint32_t>::max()))
        o.max_frame = static_cast<std::uint32_t>(*m);
    if (auto w = csp::config::number("CSP_WINDOW", 1, std::numeric_limits<std::uint32_t>::max()))
        o.window = static_cast<std::uint32_t>(*w);
    if (auto l = csp::config::number("CSP_LIVENESS_MS", 1, std::numeric_limits<std::int32_t>::max()))
        o.liveness_timeout = std::chrono::milliseconds(*l);
    if (auto k = csp::config::choice("CSP_KEEP_FREED_MEMORY", {"0", "1"})) o.keep_freed_memory = *k == "1";
    if (auto t = text("CSP_TRACE")) o.trace = *t;
    if (auto h = csp::config::number("CSP_UCX_EXPECTED_HOLD_US", 0, 60'000'000))
        o.expected_hold = std::chrono::microseconds(*h);
    if (auto c = text("CSP_TCP_LOCAL_CONGESTION")) o.local_congestion = *c == "system" ? "" : *c;
    o.local_size = env_int({"CSP_LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}, 0);
    o.local_cpus = env_int({"CSP_LOCAL_CPUS"}, 0);
    if (auto l = text("CSP_LAUNCHER_FD")) o.launcher_fd = launcher_pipe(*l);
    return o;
}

namespace {

// See node_options::keep_freed_memory. Once per process: the settings are
// the C library's, not a node's.
void keep_freed_memory() {
#if defined(__GLIBC__)
    static std::once_flag once;
    std::call_once(once, [] {
        ::mallopt(M_MMAP_THRESHOLD, 64 << 20);
        ::mallopt(M_TRIM_THRESHOLD, 256 << 20);
    });
#endif
}

// One line of a file of /proc/sys, or "?" if it cannot be read.
std::string sysctl_line(const char* path) {
    std::ifstream in(path);
    std::string line;
    return std::getline(in, line) ? line : "?";
}

// The congestion control of links within the host (node_options::
// local_congestion), or "" for the system's. One the user named and the
// kernel refuses is a usage_error now, rather than a surprise per link.
std::string local_congestion_of(const std::optional<std::string>& named) {
    const std::string algorithm = named.value_or("reno");
    if (algorithm.empty()) return algorithm;
    unique_fd probe(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!probe) return algorithm;  // no socket now: the links will fail and say why
    try {
        set_congestion_control(probe.get(), algorithm);
        return algorithm;
    } catch (const net_error& e) {
        if (!named) return "";  // the default, where the kernel does not allow it
        throw usage_error("node_options::local_congestion (CSP_TCP_LOCAL_CONGESTION): " + std::string(e.what()) +
                          "; this kernel has " + sysctl_line("/proc/sys/net/ipv4/tcp_available_congestion_control") +
                          ", and allows every process " +
                          sysctl_line("/proc/sys/net/ipv4/tcp_allowed_congestion_control"));
    }
}

}  // namespace

node::node(node_options o) {
    if (o.keep_freed_memory) keep_freed_memory();
    if (!csp::this_process::inside_runtime())
        throw usage_error("csp::net::node must be made by a process of a running csp::runtime");
    // Every socket of the node waits through the runtime's IO scheduler:
    // started here, a CSP_IO_* setting it refuses is this caller's
    // usage_error, not the end of the node's listener later.
    (void)csp::io::this_scheduler();
    if (!detail::valid_job_name(o.job))
        throw usage_error("node_options::job '" + o.job + "': use 1-200 characters of letters, digits, '.', '_', '-'");
    if (o.token.find('\n') != std::string::npos || o.token.size() > 1024)
        throw usage_error("node_options::token: at most 1024 bytes and no newline");
    // Found now, not when the node closes after the run.
    if (!o.trace.empty() && !std::ofstream(o.trace))
        throw usage_error("node_options::trace (CSP_TRACE): cannot write " + o.trace);
    // No nameserver, no rank, no size, no peers: a job of one, as an MPI
    // program started without mpiexec. Its peers table is its own listener.
    const bool alone = !o.nameserver && o.rank < 0 && o.size == 0 && o.peers.empty();
    if (alone) {
        o.rank = 0;
        o.size = 1;
    } else if (!o.nameserver) {
        if (o.rank < 0 || o.size <= 0 || o.rank >= o.size || static_cast<int>(o.peers.size()) != o.size)
            throw usage_error("a node without a nameserver needs rank, size and a peers table of `size` addresses "
                              "(set CSP_NAMESERVER, run under csp-launch, or set none of them for a job of one)");
    } else if (o.size > 0 && o.rank >= o.size) {
        throw usage_error("node_options::rank " + std::to_string(o.rank) + " is not below size " +
                          std::to_string(o.size));
    }

    if (o.window == 0) throw usage_error("node_options::window must be at least 1 byte");
    o.local_congestion = local_congestion_of(o.local_congestion);
    core_ = std::make_shared<detail::node_core>(o.window);
    endpoint bound;
    core_->usual_congestion = system_congestion_control();
    unique_fd listener = listen_on(o.bind, bound, 128, o.local_congestion.value_or(""));
    core_->address = {o.advertise.empty() ? bound.host : o.advertise, bound.port};
    if (alone) o.peers = {core_->address};
    registration entry;
    if (o.nameserver) {
        entry = register_node(*o.nameserver, o.job, o.rank, o.size, core_->address, deadline_after(o.connect_timeout));
        core_->rank = entry.rank;
        core_->size = entry.size;
    } else {
        core_->rank = o.rank;
        core_->size = o.size;
    }
    rank_ = core_->rank;
    size_ = core_->size;
    const transport_kind transport = transport_of(o);
    o.transport = transport;
    if (!o.trace.empty()) timeline_ = std::make_unique<csp::model::timeline>(core_->rank);
    core_->options = std::move(o);
    start_ucx(transport);
    to_switch_ = std::make_unique<switch_end>(switch_end{core_->to_switch.writer()});
    switch_.spawn(csp::proc("net.switch",
                            [core = core_, l = std::make_shared<unique_fd>(std::move(listener)),
                             e = std::make_shared<registration>(std::move(entry))] {
                                detail::run_switch(core, std::move(*l), std::move(*e));
                            }),
                  csp::process_kind::daemon);
}

bool node::shares_host_memory() const noexcept {
    return core_->ucx != nullptr && core_->size > 1 && core_->options.local_size >= core_->size;
}

bool node::host_links_share_memory() const noexcept { return core_->ucx != nullptr; }

bool node::host_oversubscribed() const noexcept { return core_->options.oversubscribed(); }

bool node::job_oversubscribed() const noexcept {
    return core_->size > 1 && core_->options.local_size >= core_->size && core_->options.oversubscribed();
}

bool node::receives_through_io() const noexcept {
    return core_->ucx == nullptr || core_->links_over_tcp.load(std::memory_order_relaxed) != 0 ||
           core_->links_over_ucx.load(std::memory_order_relaxed) == 0;
}

void node::start_ucx(transport_kind transport) {
    if (transport == transport_kind::tcp) return;
#if CSP_WITH_UCX
    try {
        core_->ucx = std::make_shared<detail::ucx_worker>(
            csp::runtime_lock<csp::spinlock>::needed_here(), [poke = core_->ucx_poke.writer()]() mutable {
                try {
                    poke.write(true);  // an overwriting buffer: never blocks
                } catch (const csp::error&) {
                    // poisoned: the node is closing and hands nothing out any more
                }
            },
            core_->options.expected_hold);
    } catch (const net_error& e) {
        if (transport == transport_kind::ucx) throw net_error(std::string("CSP_TRANSPORT=ucx: ") + e.what());
        core_->log_fault(std::string("links use TCP: ") + e.what());
        return;
    }
    // Before the progress process starts: it shares the look with receivers that poll.
    core_->receivers_poll = !csp::runtime_lock<csp::spinlock>::needed_here() && !core_->options.oversubscribed();
    if (core_->receivers_poll) core_->look = std::make_shared<detail::ucx_look>(*core_);
    switch_.spawn(csp::proc("net.ucx.progress", [core = core_] { detail::run_ucx_progress(core); }),
                  csp::process_kind::daemon);
#else
    if (transport == transport_kind::ucx)
        throw usage_error("CSP_TRANSPORT=ucx: this build of csp-cluster has no UCX (configure with CSP_WITH_UCX=ON "
                          "and libucx-dev installed)");
#endif
}

const std::string& node::job() const noexcept { return core_->options.job; }
endpoint node::address() const { return core_->address; }

void node::deliver_encoded_here(port_id to_port, std::uint64_t tag, payload body, std::uint32_t type) {
    message m;
    m.source = core_->rank;
    m.port = to_port;
    m.tag = tag;
    m.type = type;
    m.body = std::move(body);
    core_->traffic_out.fetch_add(1, std::memory_order_relaxed);
    core_->port_entry_of(to_port)->deliver(*core_, std::move(m));
    core_->traffic_in.fetch_add(1, std::memory_order_relaxed);
}

node::~node() {
    try {
        close();
    } catch (const std::exception& e) {
        core_->log_fault(std::string("closing: ") + e.what());
    }
}

void node::close() {
    if (closed_) return;
    closed_ = true;
    core_->flow.close("send on a closed node (" + core_->name() + "): it closed while the send waited for the window");
    csp::channel<bool> done{csp::buffer::fifo(1)};
    auto finished = done.reader();
    to_switch_->w.write(detail::close_request{done.writer()});
    finished.read();
    switch_.wait();
    // Every message is in by now: what no process could receive is said,
    // not dropped in silence.
    for (const auto& text : core_->unopened_ports_with_messages()) core_->fault("closing: " + text);
    // Nothing more can come: a receive takes what is there, then hears the
    // node closed (port::next) instead of waiting for ever.
    core_->retire_ports();
    write_timeline();
}

void node::write_timeline() {
    if (!timeline_) return;
    // The timeline stays alive until the node is destroyed: an event
    // already past the observer's load on another thread may still be in it.
    std::ofstream out(core_->options.trace);
    timeline_->write(out);
    out.flush();
    if (!out) core_->log_fault("timeline: cannot write " + core_->options.trace);
}

namespace {
// A port that a process owns again keeps every message: what its last sink
// expected to come (port_sink::expected_after_release) no longer applies.
void forget_leftovers(detail::port_entry& entry) {
    std::lock_guard lk(entry.lock);
    entry.leftovers = nullptr;
}
}  // namespace

port node::open(port_id id, departures heard) {
    if (closed_) throw usage_error("open of " + port_text(id) + " on a closed node (" + core_->name() + ")");
    {
        std::lock_guard lk(core_->lock);
        if (auto it = core_->claimed.find(id); it != core_->claimed.end())
            throw usage_error(port_text(id) + " of node " + std::to_string(core_->rank) +
                              " is reserved: " + it->second + " owns it; use another port id");
        core_->opened.insert(id);
        if (heard == departures::each) core_->every_departure.insert(id);
    }
    const auto entry = core_->port_entry_of(id);
    forget_leftovers(*entry);
    return port(id, entry->channel, core_);
}

void node::reserve(port_id id, const std::string& owner, departures heard) {
    if (closed_)
        throw usage_error(owner + ": " + port_text(id) + " of a closed node (" + core_->name() +
                          ") can receive nothing");
    std::lock_guard lk(core_->lock);
    if (auto it = core_->claimed.find(id); it != core_->claimed.end())
        throw usage_error(owner + ": " + port_text(id) + " of node " + std::to_string(core_->rank) +
                          " is already owned by " + it->second);
    // A port the program opened already would split its messages with
    // the owner just as well. (Messages may be waiting in it: a peer's
    // owner can have sent before this one claimed.)
    if (core_->opened.count(id))
        throw usage_error(owner + ": " + port_text(id) + " of node " + std::to_string(core_->rank) +
                          " is open already: the program opened it; use another port id");
    core_->claimed.emplace(id, owner);
    core_->released.erase(id);
    if (heard == departures::each) core_->every_departure.insert(id);
}

port node::claim(port_id id, const std::string& owner, departures heard) {
    reserve(id, owner, heard);
    const auto entry = core_->port_entry_of(id);
    forget_leftovers(*entry);
    port p(id, entry->channel, core_);
    p.report_ = false;  // the owner reports what its processes take (report_taken)
    return p;
}

sink_claim node::claim(port_id id, const std::string& owner, departures heard, port_sink& sink) {
    reserve(id, owner, heard);
    const auto entry = core_->port_entry_of(id);
    // Messages that came before the claim go first, in order. The reads
    // never wait (the claim keeps every other reader away), but a read may
    // yield, so none is made under the entry's lock: the sink is set only
    // once the lock finds the channel empty, and from then on deliveries
    // reach it instead.
    const auto early = entry->channel.reader();
    for (;;) {
        {
            std::lock_guard lk(entry->lock);
            if (entry->channel.buffered() == 0) {
                entry->sink = &sink;
                entry->leftovers = nullptr;
                return sink_claim(*this, id);
            }
        }
        message m = early.read();
        detail::message_taken(*core_, m, false);
        sink.deliver(std::move(m));
    }
}

void node::release(port_id id) {
    std::shared_ptr<detail::port_entry> entry;
    {
        std::lock_guard lk(core_->lock);
        if (auto it = core_->claimed.find(id); it != core_->claimed.end()) {
            core_->released[id] = it->second;
            core_->claimed.erase(it);
        }
        if (auto it = core_->ports.find(id); it != core_->ports.end()) entry = it->second;
    }
    // Waits for a delivery under way: after this no sink call runs or starts.
    if (entry) {
        std::lock_guard lk(entry->lock);
        if (entry->sink) {
            try {
                entry->leftovers = entry->sink->expected_after_release();
            } catch (...) {
                // Out of memory: what comes later is reported, not dropped.
            }
        }
        entry->sink = nullptr;
    }
}

#if CSP_WITH_UCX
namespace {

// A data frame sent by the calling process itself over the peer's UCX link,
// when ucx_worker::send_direct allows it; false: it goes through the switch.
bool sent_direct(detail::node_core& core, csp::writer<detail::switch_input>& to_switch, detail::send_request& r) {
    using detail::ucx_worker;
    try {
        switch (core.ucx->send_direct(r.to, r.frame)) {
            case ucx_worker::direct::not_taken: return false;
            case ucx_worker::direct::too_large:
                detail::dropped_over_peer_max_frame(core, r.to, core.flow.peer_max_frame(r.to), r.frame);
                return true;
            case ucx_worker::direct::sent: core.sent_direct.fetch_add(1, std::memory_order_relaxed); return true;
        }
    } catch (const net_error& e) {
        // What the link's outbound process does when UCX refuses a send:
        // the link ends, and the message with it.
        to_switch.write(detail::link_down{r.to, false, e.what()});
    }
    return true;
}

}  // namespace
#endif

send_status node::post(int to, port_id to_port, std::uint64_t tag, payload body, std::uint32_t type, bool wait,
                       bool notice) {
    if (closed_) throw usage_error("send on a closed node (" + core_->name() + ")");
    if (to < 0 || (core_->size > 0 && to >= core_->size))
        throw usage_error("send to rank " + std::to_string(to) + ": job '" + job() + "' has ranks 0.." +
                          std::to_string(core_->size - 1));
    if (body.size() > core_->options.max_frame)
        throw usage_error("send of " + std::to_string(body.size()) + " bytes: over this node's max_frame of " +
                          std::to_string(core_->options.max_frame));
    // Into the port before send returns, as a channel write would be: a
    // receive after it finds the message, also on a port that no other node
    // is left to send to (port.hpp). Nothing in flight, no window.
    if (to == core_->rank) {
        deliver_encoded_here(to_port, tag, std::move(body), type);
        return send_status::sent;
    }
    if (core_->departures.load(std::memory_order_acquire) != 0) {
        std::lock_guard lk(core_->lock);
        if (auto it = core_->departed.find(to); it != core_->departed.end()) {
            if (notice) return send_status::sent;  // nobody there to tell
            throw peer_error(to, it->second);
        }
    }
    try {
        if (core_->flow.admit(to, body.size(), wait) == detail::admission::window_full)
            return send_status::window_full;
    } catch (const peer_error&) {
        if (notice) return send_status::sent;  // the peer went while the notice waited for its window
        throw;
    }
    core_->traffic_out.fetch_add(1, std::memory_order_relaxed);
    std::uint16_t sequence = 0;
    if (csp::observed()) {
        sequence = core_->next_sequence();
        csp::notify_message(csp::event::kind::message_sent, {core_->rank, to, to_port, tag, body.size(), sequence});
    }
    detail::send_request r{to, {}};
    r.frame.head = header::data(static_cast<std::uint32_t>(core_->rank), to_port, tag,
                                static_cast<std::uint32_t>(body.size()), type, sequence);
    r.frame.body = std::move(body);
    r.frame.notice = notice;
#if CSP_WITH_UCX
    if (core_->ucx && sent_direct(*core_, to_switch_->w, r)) return send_status::sent;
#endif
    to_switch_->w.write(std::move(r));
    return send_status::sent;
}

void node::forward(int to, port_id to_port, const message& m, std::uint64_t tag) {
    if (m.failure)
        throw usage_error("forward of a port's failure report (" + std::string(m.failure->what()) +
                          "): only a message that carries data can be sent on");
    post(to, to_port, tag, m.body, m.type, true);
}

namespace detail {

bool receivers_poll(const node_core& core) noexcept { return core.receivers_poll; }

// Set once and never changed (the switch's set_departed), so after the
// acquire no lock is needed to copy it.
std::shared_ptr<const peer_error> no_sender_left(const node_core& core) noexcept {
    return core.all_departed.load(std::memory_order_acquire) ? core.no_sender_left : nullptr;
}

peer_error no_sender_error(const peer_error& last, const std::string& port_name) {
    return peer_error(last.peer(),
                      std::string(last.what()) + "; no node of the job is left that could send to " + port_name);
}

#if !CSP_WITH_UCX
// Without UCX receivers_poll stays false and no port calls this.
std::optional<message> poll_port(node_core&, port_id, const csp::channel<message>&) { return std::nullopt; }
#endif

void port_entry::deliver(node_core& core, message m) {
    std::lock_guard lk(lock);
    if (sink) {
        message_taken(core, m, false);
        sink->deliver(std::move(m));
    } else if (!m.failure && leftovers && leftovers(m)) {
        message_taken(core, m, false);
        core.leftovers.fetch_add(1, std::memory_order_relaxed);
    } else {
        if (m.failure) notices.fetch_add(1, std::memory_order_relaxed);
        writer.write(std::move(m));
    }
}

void node_core::retire_ports() {
    // Lock order: the core's lock, then an entry's (as for delivery's map).
    std::lock_guard lk(lock);
    for (auto& [id, entry] : ports) {
        std::lock_guard held(entry->lock);
        entry->writer.retire();
        if (entry->sink) entry->sink->node_closed(name());
    }
}

bool message_taken(node_core& core, const message& m, bool report) noexcept {
    if (m.failure || m.source == core.rank || m.source < 0) return false;  // not from a link
    if (report) {
        try {
            report_taken(m, core.rank);
        } catch (...) {
            // An observer that cannot record (out of memory) loses this
            // event only: taking the message must not fail for a trace.
        }
    }
    return core.flow.taken(m.source, charge_of(m.body.size()));
}

}  // namespace detail

std::vector<std::string> node::faults() const {
    std::lock_guard lk(core_->lock);
    return {core_->faults.begin(), core_->faults.end()};
}

node_stats node::stats() const {
    std::size_t faults;
    {
        std::lock_guard lk(core_->lock);
        faults = core_->faults_total;
    }
    std::size_t landed = core_->landings.landed();
    std::size_t held = 0, queued = 0, queue_full = 0;
#if CSP_WITH_UCX
    if (core_->ucx) {
        landed += core_->ucx->landed();
        held = core_->ucx->held();
        queued = core_->ucx->queued();
        queue_full = core_->ucx->queue_full();
    }
#endif
    return {core_->links_up.load(std::memory_order_relaxed), core_->links_over_ucx.load(std::memory_order_relaxed),
            core_->links_made.load(std::memory_order_relaxed),
            core_->links_accepted.load(std::memory_order_relaxed), core_->duplicates.load(std::memory_order_relaxed),
            faults, core_->sent_direct.load(std::memory_order_relaxed), queued, queue_full, landed, held,
            core_->taken_polling.load(std::memory_order_relaxed), core_->late_wakeups.load(std::memory_order_relaxed),
            core_->leftovers.load(std::memory_order_relaxed), core_->unsent.load(std::memory_order_relaxed),
            core_->abandoned.load(std::memory_order_relaxed)};
}

// A message from `from` comes over one link, TCP or UCX: the landing is
// named to both, and withdrawn from both.
landing node::land_bytes(int from, port_id to_port, std::uint64_t tag, std::byte* at, std::size_t bytes,
                         std::uint32_t type) {
    if (from == rank_ || from < 0 || from >= size_) return {};
    core_->landings.add(detail::landing_key{from, to_port, tag}, at, bytes, type);
    bool in_ucx = false;
#if CSP_WITH_UCX
    // UCX lands only payloads it receives by rendezvous; one that fits a
    // smaller buffer never is, and naming the buffer would cost the worker's
    // lock twice for nothing.
    in_ucx = core_->ucx && bytes >= detail::ucx_worker::rendezvous_from;
    if (in_ucx) core_->ucx->land(from, to_port, tag, at, bytes, type);
#endif
    return landing(core_, from, to_port, tag, false, in_ucx);
}

landing node::expect(int from, port_id to_port, std::uint64_t tag, std::size_t bytes) {
    if (from == rank_ || from < 0 || from >= size_) return {};
#if CSP_WITH_UCX
    if (core_->ucx && bytes >= detail::ucx_worker::rendezvous_from) {
        core_->ucx->expect_landing(from, to_port, tag);
        return landing(core_, from, to_port, tag, true, true);
    }
#else
    (void)to_port;
    (void)tag;
    (void)bytes;
#endif
    return {};
}

void landing::end() noexcept {
    if (!core_) return;
    if (expectation_) {
#if CSP_WITH_UCX
        core_->ucx->unexpect(peer_, port_, tag_);
#endif
        core_.reset();
        return;
    }
    core_->landings.remove(detail::landing_key{peer_, port_, tag_});
#if CSP_WITH_UCX
    if (in_ucx_) core_->ucx->unland(peer_, port_, tag_);
#endif
    core_.reset();
}

}  // namespace csp::net
