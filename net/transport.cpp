#include "net/transport.hpp"

#include <sodium.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "csp/alt.hpp"
#include "csp/deadline_after.hpp"
#include "csp/timer.hpp"
#include "net/errors.hpp"
#include "net/socket.hpp"
#include "net/tcp_transport.hpp"
#if CSP_WITH_UCX
#include "net/ucx_transport.hpp"
#include "net/ucx_worker.hpp"
#endif

namespace csp::net::detail {

namespace {

// The largest `transports` payload accepted: a UCX worker address (a few
// hundred bytes with shared memory, TCP and one HCA).
constexpr std::uint32_t max_offer = 64 * 1024;

enum class carried_by : int { failed, tcp, ucx };

// A `transports` payload: empty (TCP only), or "UCX1", a BLAKE2b-256 hash of
// the UCX worker address, and the address. UCX trusts an address it is
// given, so a damaged one is caught here rather than inside UCX. (The frame
// comes from a node that proved the job's token; like data frames, it is not
// protected against someone who holds the token or alters the traffic.)
constexpr char offer_magic[4] = {'U', 'C', 'X', '1'};
constexpr std::size_t offer_hash = crypto_generichash_BYTES;  // 32

std::string encode_offer(const std::string& address) {
    if (address.empty()) return {};
    std::string out(offer_magic, sizeof offer_magic);
    out.resize(sizeof offer_magic + offer_hash);
    crypto_generichash(reinterpret_cast<unsigned char*>(out.data() + sizeof offer_magic), offer_hash,
                       reinterpret_cast<const unsigned char*>(address.data()), address.size(), nullptr, 0);
    return out + address;
}

// The UCX address in a peer's payload ("" for TCP only); frame_error if it
// is malformed.
std::string decode_offer(const std::string& payload) {
    if (payload.empty()) return {};
    const std::size_t head = sizeof offer_magic + offer_hash;
    if (payload.size() <= head || payload.compare(0, sizeof offer_magic, offer_magic, sizeof offer_magic) != 0)
        throw frame_error("malformed transports frame: " + std::to_string(payload.size()) +
                          " bytes that are not a UCX1 offer");
    std::string address = payload.substr(head);
    unsigned char hash[offer_hash];
    crypto_generichash(hash, offer_hash, reinterpret_cast<const unsigned char*>(address.data()), address.size(),
                       nullptr, 0);
    if (sodium_memcmp(hash, payload.data() + sizeof offer_magic, offer_hash) != 0)
        throw frame_error("malformed transports frame: the UCX address does not match its hash");
    return address;
}

// The peer's `transports` frame, the first after the handshake (frame.hpp).
// closed_before_data if the connection ended (or was reset) before its first
// byte.
std::string read_offer(const node_core& core, int peer, int fd) {
    const auto deadline = deadline_after(core.options.liveness_timeout);
    const std::string what = "the transports frame of " + core.peer_name(peer);
    std::array<std::byte, header::size> raw;
    try {
        read_exact(fd, raw.data(), raw.size(), deadline, what);
    } catch (const csp::io::io_error& e) {
        // A reset can also come as the wait's error rather than the read's.
        const int error = e.system_error();
        if (e.cond() == csp::io::io_error::condition::hangup || error == ECONNRESET || error == EPIPE)
            throw closed_before_data(what + ": " + connection_lost(e));
        throw;
    }
    const header h = header::decode(raw.data(), max_offer);
    if (h.op != opcode::transports)
        throw frame_error(std::string("expected the transports frame after the handshake, got a ") + describe(h.op) +
                          " frame");
    if (static_cast<int>(h.source) != peer)
        throw frame_error("transports frame claims to come from node " + std::to_string(h.source) +
                          " on the connection from node " + std::to_string(peer));
    std::string offer(h.length, '\0');
    if (h.length) read_exact(fd, offer.data(), offer.size(), deadline, what);
    return decode_offer(offer);
}

void write_frame(int fd, const header& h, const void* body, const node_core& core, int peer) {
    std::array<std::byte, header::size> raw;
    h.encode(raw.data());
    const auto deadline = deadline_after(core.options.liveness_timeout);
    write_all(fd, raw.data(), raw.size(), deadline, "the connection to " + core.peer_name(peer));
    if (h.length) write_all(fd, body, h.length, deadline, "the connection to " + core.peer_name(peer));
}

// Every link: both sides send their `transports` frame, then the link moves
// its frames over UCX if both offered it, else over TCP. The decision is
// the inbound side's, which reads the peer's offer, and reaches the
// outbound side through `decided`; each side's own offer is its first frame
// (after the welcome, on an accepted link), so neither waits for the other
// before sending it.
//
// The connector commits to a link when it reads the welcome, the acceptor
// when it reads the connector's offer, which the connector sends only
// after. A connector that timed out in between (this node stalled while its
// welcome was on the way) hangs up without a frame: on an accepted link, an
// end before the offer is that abandoned attempt, reported as such
// (link_down::abandoned) rather than as the peer's death. Nothing of the
// link's queue has been read by then: the outbound side waits for the
// decision before it takes anything from it.
class link_transport final : public transport {
public:
    explicit link_transport(unique_fd connection) : fd_(std::move(connection)) {}
    ~link_transport() override {
#if CSP_WITH_UCX
        if (ucx_ && peer_ >= 0) ucx_->forget(peer_);
#endif
    }

    const char* name() const noexcept override {
        switch (static_cast<carried_by>(carrier_.load(std::memory_order_acquire))) {
            case carried_by::tcp: return "tcp";
            case carried_by::ucx: return "ucx";
            default: return "negotiating";
        }
    }

    int start(link_start s) override {
        peer_ = s.peer;
        const int fd = fd_.get();
        std::string offer;
        csp::reader<ucx_tidings> news;
#if CSP_WITH_UCX
        if (s.core->ucx) {
            ucx_ = s.core->ucx;
            // Ready for the peer's frames before it can have our address.
            ucx_news channel("ucx news of node " + std::to_string(s.peer), csp::buffer::unbounded());
            news = channel.reader();
            {
                std::lock_guard lk(s.core->lock);
                s.core->ucx_links.insert_or_assign(s.peer, channel);
            }
            ucx_->expect(s.peer, s.core->options.max_frame);
            offer = encode_offer(ucx_->address());
        }
#endif
        const std::string peer_name = std::to_string(s.peer);
        s.group.spawn(csp::proc("net.inbound." + peer_name,
                                [this, core = s.core, peer = s.peer, fd, own_offer = !offer.empty(),
                                 accepted = s.first.has_value(), news = std::move(news),
                                 decided = decided_.writer()]() mutable {
                                    inbound(std::move(core), peer, fd, own_offer, accepted, std::move(news), decided);
                                }),
                      csp::process_kind::daemon);
        s.group.spawn(csp::proc("net.outbound." + peer_name,
                                [this, core = std::move(s.core), peer = s.peer, fd, q = std::move(s.queue),
                                 first = std::move(s.first), offer = std::move(offer),
                                 decided = decided_.reader(), stop = interrupted_.reader()]() mutable {
                                    outbound(std::move(core), peer, fd, std::move(q), std::move(first), offer, decided,
                                             stop);
                                }),
                      csp::process_kind::daemon);
        return 2;
    }

    void interrupt() noexcept override {
        if (fd_.get() >= 0) ::shutdown(fd_.get(), SHUT_RDWR);
        interrupted_.poison();
    }

private:
    // The transport outlives both processes (transport.hpp), so they may use
    // its members.
    void inbound(std::shared_ptr<node_core> core, int peer, int fd, bool own_offer, bool accepted,
                 csp::reader<ucx_tidings> news, csp::writer<int> decided) {
        std::string peer_offer;
        carried_by by = carried_by::failed;
        std::string failure;
        bool abandoned = false;
        try {
            try {
                peer_offer = read_offer(*core, peer, fd);
            } catch (const closed_before_data&) {
                abandoned = accepted;
                throw;
            }
            if (own_offer && !peer_offer.empty()) {
#if CSP_WITH_UCX
                ucx_->connect(peer, peer_offer);
                wire_up(*core, peer);
                by = carried_by::ucx;
#endif
            } else if (core->options.transport == transport_kind::ucx) {
                throw net_error(core->peer_name(peer) +
                                " offers TCP only, and this node requires UCX (CSP_TRANSPORT=ucx)");
            } else {
                by = carried_by::tcp;
            }
        } catch (const std::exception& e) {
            failure = e.what();
        }
        if (by == carried_by::failed) {
            // Our offer goes out before the link ends, whatever this side
            // decided: a connection that ends after it is the peer's to call
            // a failure, and only one that ends before it an abandoned attempt.
            (void)offered_.reader().read();
        }
        carrier_.store(static_cast<int>(by), std::memory_order_release);
        decided.write(static_cast<int>(by));
        if (by == carried_by::tcp) {
            core->links_over_tcp.fetch_add(1, std::memory_order_relaxed);
            return run_tcp_inbound(std::move(core), peer, fd);
        }
#if CSP_WITH_UCX
        if (by == carried_by::ucx) {
            core->links_over_ucx.fetch_add(1, std::memory_order_relaxed);
            return run_ucx_liveness(std::move(core), peer, fd, std::move(news));
        }
#endif
        (void)news;
        auto to_switch = core->to_switch.writer();
        to_switch.write(link_down{peer, false, failure, {}, abandoned});
        to_switch.write(link_process_exited{peer});
    }

    void outbound(std::shared_ptr<node_core> core, int peer, int fd, csp::reader<outgoing> queue,
                  std::optional<outgoing> first, const std::string& offer, csp::reader<int> decided,
                  csp::reader<bool> interrupted) {
        int by = static_cast<int>(carried_by::failed);
        try {
            try {
                if (first) write_frame(fd, first->head, first->body.data(), *core, peer);
                write_frame(fd,
                            header::transports(static_cast<std::uint32_t>(core->rank),
                                               static_cast<std::uint32_t>(offer.size())),
                            offer.data(), *core, peer);
            } catch (const std::exception&) {
                offered_.writer().write(false);
                throw;
            }
            offered_.writer().write(true);
            bool ignored;
            if (csp::select(csp::input(decided, by), csp::input(interrupted, ignored)) == 1)
                by = static_cast<int>(carried_by::failed);
        } catch (const std::exception&) {
            // The inbound side reports the link's end (it reads the same
            // broken connection); nothing more is sent.
            by = static_cast<int>(carried_by::failed);
        }
        switch (static_cast<carried_by>(by)) {
            case carried_by::tcp: return run_tcp_outbound(std::move(core), peer, fd, std::move(queue));
#if CSP_WITH_UCX
            case carried_by::ucx:
                return run_ucx_outbound(std::move(core), peer, fd, std::move(queue), std::move(interrupted));
#endif
            default: break;
        }
        core->to_switch.writer().write(link_process_exited{peer});
    }

#if CSP_WITH_UCX
    // Completes the new endpoint's wire-up with the peer (a flush), while
    // both nodes are known to progress their workers: a node that sends and
    // then blocks its thread must not leave its first frames waiting for a
    // wire-up only its own progress can finish. Both sides are committed to
    // the link by now, so a peer stalled meanwhile is waited for as long as
    // a stall is (liveness_timeout), not one attempt's connect_timeout.
    void wire_up(node_core& core, int peer) {
        csp::channel<bool> flushed("ucx wire-up with node " + std::to_string(peer), csp::buffer::fifo(1));
        ucx_->flush(peer, [out = flushed.writer()](bool ok) { out.write(ok); });
        bool ok = false, ignored;
        const int got = csp::select(csp::input(flushed.reader(), ok), csp::input(interrupted_.reader(), ignored),
                                    csp::timeout(core.options.liveness_timeout));
        if (got == 1) throw net_error("the link was closed during its UCX wire-up");
        if (got == 2)
            throw net_error("UCX wire-up with " + core.peer_name(peer) + " took longer than the liveness timeout of " +
                            std::to_string(core.options.liveness_timeout.count()) + " ms");
        if (!ok) throw net_error("UCX could not reach " + core.peer_name(peer) + " at the address it offered");
    }
#endif

    unique_fd fd_;
    int peer_ = -1;
    csp::channel<int> decided_{"transport decision", csp::buffer::fifo(1)};
    csp::channel<bool> offered_{"transport offer sent", csp::buffer::fifo(1)};  // or failed to
    csp::channel<bool> interrupted_{"transport interrupted"};
    std::atomic<int> carrier_{static_cast<int>(carried_by::failed)};
#if CSP_WITH_UCX
    std::shared_ptr<ucx_worker> ucx_;
#endif
};

}  // namespace

std::string connection_lost(int error) {
    if (error == 0) return "connection closed without a goodbye (the node died or was killed)";
    if (error == ECONNRESET || error == EPIPE)
        return "connection reset without a goodbye (the node died or was killed before it read what was sent to it)";
    return "reading from the connection: " + error_text(error);
}

std::string connection_lost(const csp::io::io_error& e) {
    return e.system_error() != 0 ? connection_lost(e.system_error()) : e.what();
}

bool dropped_over_peer_max_frame(node_core& core, int peer, std::uint32_t peer_max_frame, const outgoing& f) {
    if (f.head.op != opcode::data || peer_max_frame == 0 || f.head.length <= peer_max_frame) return false;
    core.flow.returned(peer, charge_of(f.body.size()));
    core.not_sent(peer, unsent_reason::over_max_frame,
                  "a message of " + std::to_string(f.head.length) + " bytes to " + port_text(f.head.port) +
                      " of " + core.peer_name(peer) + " was not sent: over its max_frame of " +
                      std::to_string(peer_max_frame));
    return true;
}

std::unique_ptr<transport> make_transport(const node_core&, int, unique_fd connection) {
    return std::make_unique<link_transport>(std::move(connection));
}

}  // namespace csp::net::detail
