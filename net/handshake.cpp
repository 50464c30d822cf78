#include "net/handshake.hpp"

#include <sys/socket.h>

#include <array>

#include "csp/alt.hpp"
#include "csp/deadline_after.hpp"
#include "net/auth.hpp"
#include "net/handshake_messages.hpp"
#include "net/errors.hpp"
#include "net/nameserver_client.hpp"

namespace csp::net::detail {
namespace {

// Writes one handshake frame: `make(source, length)` names its kind.
void write_frame(int fd, header (*make)(std::uint32_t, std::uint32_t), int source, const std::string& body,
                 clock::time_point deadline, const std::string& what, give_up stop = nullptr) {
    std::vector<std::byte> out(header::size + body.size());
    make(static_cast<std::uint32_t>(source), static_cast<std::uint32_t>(body.size())).encode(out.data());
    std::memcpy(out.data() + header::size, body.data(), body.size());
    write_all(fd, out.data(), out.size(), deadline, what, stop);
}

template <std::size_t N>
std::string bytes_of(const std::array<std::byte, N>& a) {
    return std::string(reinterpret_cast<const char*>(a.data()), N);
}

// Reads one handshake frame (header and payload) to the exact byte. Only
// an end before the header's first byte is closed_before_data: one after
// the header is a cut frame.
std::pair<header, std::string> read_frame(int fd, clock::time_point deadline, const std::string& what,
                                          give_up stop = nullptr) {
    std::array<std::byte, header::size> raw;
    read_exact(fd, raw.data(), raw.size(), deadline, what, stop);
    const header h = header::decode(raw.data(), handshake_max_frame);
    std::string body(h.length, '\0');
    try {
        if (h.length) read_exact(fd, body.data(), body.size(), deadline, what, stop);
    } catch (const closed_before_data& e) {
        throw net_error(e.what());
    }
    return {h, std::move(body)};
}

// Every link socket starts under node_options::local_congestion (resolved
// when the node was made; listen_on, connect_to); one whose peer is on
// another host then goes back to the system's. Should the kernel refuse
// that, the link keeps the local one: a choice of speed, never of what
// arrives.
void congestion_for_peer(const node_core& core, int fd) {
    const std::string& local = core.options.local_congestion.value_or("");
    if (local.empty() || core.usual_congestion.empty() || local == core.usual_congestion || host_local(fd)) return;
    try {
        set_congestion_control(fd, core.usual_congestion);
    } catch (const net_error&) {
    }
}

}  // namespace

outgoing welcome_frame(const node_core& core) {
    outgoing f;
    f.head = header::welcome(static_cast<std::uint32_t>(core.rank), 0);
    return f;
}

void run_greeter(std::shared_ptr<node_core> core, unique_fd fd, std::string from) {
    // The fd leaves the node's set of handshaking connections before it is
    // closed: close() shuts down every number in that set, and a closed
    // number may already belong to another connection. (An fd handed to a
    // link was taken out of the set by the switch.)
    struct leave_greeting {
        node_core& core;
        const unique_fd& fd;
        ~leave_greeting() {
            if (fd.get() < 0) return;
            core.greeting.remove(fd.get());
        }
    } leave{*core, fd};
    congestion_for_peer(*core, fd.get());
    const auto deadline = deadline_after(core->options.handshake_timeout);
    const std::string what = "connection from " + from;
    // Answers refuse(reason), best effort: the stranger may be gone already.
    auto answer_refusal = [&](const std::string& reason) {
        try {
            write_frame(fd.get(), header::refuse, core->rank, reason, clock::now() + std::chrono::milliseconds(200),
                        what);
        } catch (...) {
        }
    };
    auto refuse = [&](std::string reason) {
        // The socket helpers' errors name the connection already.
        if (reason.starts_with(what + ": ")) reason.erase(0, what.size() + 2);
        core->fault("refused " + what + ": " + reason);
        answer_refusal(reason);
    };
    int peer = -1;
    try {
        auto [h, body] = read_frame(fd.get(), deadline, what);
        const hello_message hello = check_hello(h, body, core->options.job, core->rank, core->size);
        handshake_context ctx{};
        ctx.connector_nonce = hello.connector_nonce;
        peer = static_cast<int>(h.source);
        ctx.job = core->options.job;
        ctx.connector_rank = h.source;
        ctx.acceptor_rank = static_cast<std::uint32_t>(core->rank);
        ctx.acceptor_nonce = fresh_nonce();
        ctx.connector_limits = hello.limits;
        ctx.acceptor_limits = core->limits();
        const std::string challenge = bytes_of(ctx.acceptor_nonce) +
                                      bytes_of(prove(role::acceptor, core->options.token, ctx)) +
                                      limits_bytes(ctx.acceptor_limits);
        write_frame(fd.get(), header::challenge, core->rank, challenge, deadline, what);
        auto [p, claimed] = read_frame(fd.get(), deadline, what);
        const proof given = check_proof_frame(p, claimed, hello.rank);
        if (!proofs_match(prove(role::connector, core->options.token, ctx), given))
            return refuse("wrong token");
        core->flow.learnt(peer, hello.limits);  // proved: the limits are the peer's
    } catch (const closed_before_data&) {
        // Hung up between frames (seen by a read, or by the write of the
        // challenge): a port probe, or a peer's connector stopped by its
        // own node's close or failure (the losing half of a crossing,
        // before its hello or its proof). Nothing malformed came, so there
        // is nothing to refuse and no fault; a frame cut short is one.
        return;
    } catch (const std::exception& e) {
        return refuse(e.what());
    }

    csp::channel<std::string> answer{csp::buffer::fifo(1)};
    auto reply = answer.reader();
    try {
        core->to_switch.writer().write(incoming_hello{peer, fd.get(), answer.writer()});
    } catch (const std::exception&) {
        return;  // the node is closing
    }
    // The switch answers every hello it handles, even while the node closes
    // (it may still accept a peer it has messages for), but once it has
    // handled its last input it answers no more: the node's stop channel,
    // poisoned then, ends the wait. A verdict written before is already in the reply
    // channel and still counts; after it, the switch takes no fd, so giving
    // up here never leaves a connection with two owners.
    std::string verdict;
    try {
        bool ignored;
        csp::select(csp::input(reply, verdict), csp::input(core->stop.reader(), ignored));
    } catch (const csp::poisoned_error&) {
        if (csp::select(csp::input(reply, verdict), csp::skip()) == 1)
            verdict = closing_reason(core->rank);
    }
    if (verdict.empty()) {
        fd.release();  // the link's now; its outbound sends the welcome
        return;
    }
    // The losing half of a crossing, or a hello that came while this node
    // closes (a peer's connector racing its own node's close, say): answered,
    // and no fault of the peer's.
    if (verdict == duplicate_reason || verdict == closing_reason(core->rank)) answer_refusal(verdict);
    else refuse(verdict);
}

namespace {
// An answer that trying again cannot change: the peer refused with a reason,
// or does not prove the token. Anything else (a timeout, a refused or reset
// connection, a rank not registered yet) may be a stall, and is retried.
class definitive_error : public net_error {
public:
    using net_error::net_error;
};
}  // namespace

void run_connector(std::shared_ptr<node_core> core, int peer) {
    connect_result result{peer, -1, false, {}, true};
    const auto deadline = deadline_after(core->options.connect_timeout);
    // Every wait below also ends when a closing node gives up on links still
    // being set up (its linger ran out), so close() never waits for it.
    const auto stop_reader = core->give_up.reader();
    const give_up stop = &stop_reader;
    try {
        endpoint at;
        if (core->options.nameserver) {
            try {
                at = lookup(*core->options.nameserver, core->options.job, peer, deadline, stop);
            } catch (const rank_ended_error& e) {
                throw definitive_error(e.what());  // it will not come back: no retry, no wait
            }
        } else if (peer < static_cast<int>(core->options.peers.size())) {
            at = core->options.peers[static_cast<std::size_t>(peer)];
        } else {
            throw definitive_error("no address for node " + std::to_string(peer) +
                                   ": no nameserver and no peers table entry");
        }
        const std::string what = "connection to " + core->peer_name(peer) + " at " + at.str();
        unique_fd fd = connect_to(at, deadline, stop, core->options.local_congestion.value_or(""));
        congestion_for_peer(*core, fd.get());
        core->to_switch.writer().write(connector_connected{peer});
        handshake_context ctx{};
        ctx.job = core->options.job;
        ctx.connector_rank = static_cast<std::uint32_t>(core->rank);
        ctx.acceptor_rank = static_cast<std::uint32_t>(peer);
        ctx.connector_nonce = fresh_nonce();
        ctx.connector_limits = core->limits();
        const std::string hello =
            bytes_of(ctx.connector_nonce) + limits_bytes(ctx.connector_limits) + core->options.job;
        write_frame(fd.get(), header::hello, core->rank, hello, deadline, what, stop);
        // The token is only ever used to check the acceptor's proof and to
        // make ours, which commits to the acceptor's nonce: whoever answered
        // learns nothing it can use on another connection.
        auto refused = [&](const header& h, const std::string& text) {
            if (h.op != opcode::refuse) return false;
            if (text == duplicate_reason) {
                result.duplicate = true;
            } else {
                result.left = text == closing_reason(peer);
                throw definitive_error(what + " refused: " + text);
            }
            return true;
        };
        auto [challenge, body] = read_frame(fd.get(), deadline, what, stop);
        if (!refused(challenge, body)) {
            challenge_message c;
            try {
                c = check_challenge(challenge, body, peer);
            } catch (const refusal& e) {
                throw definitive_error(what + ": " + e.what());
            }
            ctx.acceptor_nonce = c.acceptor_nonce;
            ctx.acceptor_limits = c.limits;
            if (!proofs_match(prove(role::acceptor, core->options.token, ctx), c.acceptor_proof))
                throw definitive_error(what + ": the peer does not know this job's token");
            core->flow.learnt(peer, c.limits);
            const std::string mine = bytes_of(prove(role::connector, core->options.token, ctx));
            write_frame(fd.get(), header::proof, core->rank, mine, deadline, what, stop);
            auto [answer, text] = read_frame(fd.get(), deadline, what, stop);
            if (!refused(answer, text)) {
                if (answer.op != opcode::welcome)
                    throw definitive_error(what + ": expected welcome, got " + describe(answer.op));
                if (static_cast<int>(answer.source) != peer || answer.length != 0)
                    throw definitive_error(what + ": malformed welcome");
                result.fd = fd.release();
            }
        }
    } catch (const definitive_error& e) {
        result.error = e.what();
        result.retryable = false;
    } catch (const std::exception& e) {
        result.error = e.what();
    }
    try {
        core->to_switch.writer().write(std::move(result));
    } catch (...) {
        unique_fd orphan(result.fd);  // the node is closing: nobody takes the connection
    }
}

}  // namespace csp::net::detail
