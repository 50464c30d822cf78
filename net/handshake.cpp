#include "net/handshake.hpp"

#include <sys/socket.h>

#include <array>

#include "csp/alt.hpp"
#include "net/errors.hpp"
#include "net/nameserver_client.hpp"

namespace csp::net::detail {
namespace {

std::vector<std::byte> encode_frame(const header& h, const std::string& body) {
    std::vector<std::byte> out(header::size + body.size());
    h.encode(out.data());
    std::memcpy(out.data() + header::size, body.data(), body.size());
    return out;
}

payload text_payload(const std::string& s) {
    std::byte* out;
    payload p = payload::allocate(s.size(), out);
    if (!s.empty()) std::memcpy(out, s.data(), s.size());
    return p;
}

// Reads one handshake frame (header and payload) to the exact byte.
std::pair<header, std::string> read_frame(int fd, clock::time_point deadline, const std::string& what) {
    std::array<std::byte, header::size> raw;
    read_exact(fd, raw.data(), raw.size(), deadline, what);
    const header h = header::decode(raw.data(), handshake_max_frame);
    std::string body(h.length, '\0');
    if (h.length) read_exact(fd, body.data(), body.size(), deadline, what);
    return {h, std::move(body)};
}

}  // namespace

outgoing welcome_frame(const node_core& core) {
    outgoing f;
    f.body = text_payload(core.options.token);
    f.head = header::welcome(static_cast<std::uint32_t>(core.rank), static_cast<std::uint32_t>(f.body.size()));
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
            std::lock_guard lk(core.lock);
            core.greeting.erase(fd.get());
        }
    } leave{*core, fd};
    const auto deadline = clock::now() + core->options.handshake_timeout;
    const std::string what = "connection from " + from;
    // Answers refuse(reason), best effort: the stranger may be gone already.
    auto answer_refusal = [&](const std::string& reason) {
        const auto h = header::refuse(static_cast<std::uint32_t>(core->rank), static_cast<std::uint32_t>(reason.size()));
        const auto bytes = encode_frame(h, reason);
        try {
            write_all(fd.get(), bytes.data(), bytes.size(), clock::now() + std::chrono::milliseconds(200), what);
        } catch (...) {
        }
    };
    auto refuse = [&](const std::string& reason) {
        core->fault("refused " + what + ": " + reason);
        answer_refusal(reason);
    };
    int peer = -1;
    try {
        auto [h, body] = read_frame(fd.get(), deadline, what);
        if (h.op != opcode::hello) return refuse(std::string("expected a hello frame, got ") + describe(h.op));
        const auto nl = body.find('\n');
        const std::string job = nl == std::string::npos ? body : body.substr(0, nl);
        const std::string token = nl == std::string::npos ? std::string() : body.substr(nl + 1);
        if (job != core->options.job) return refuse("it belongs to job '" + job + "', not '" + core->options.job + "'");
        if (token != core->options.token)
            return refuse(token.empty() ? "missing token" : "wrong token");
        peer = static_cast<int>(h.source);
        if (peer == core->rank || (core->size > 0 && peer >= core->size))
            return refuse("it claims rank " + std::to_string(peer) + ", which is not a peer of node " +
                          std::to_string(core->rank) + " in a job of " + std::to_string(core->size));
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
    // The switch answers every hello it handles, but once it has closed and
    // all its links have ended it handles no more: the node's stop channel,
    // poisoned at close, ends the wait then. A verdict the switch wrote
    // before it closed is already in the reply channel and still counts.
    std::string verdict;
    try {
        bool ignored;
        csp::select(csp::input(reply, verdict), csp::input(core->stop.reader(), ignored));
    } catch (const csp::poisoned_error&) {
        if (csp::select(csp::input(reply, verdict), csp::skip()) == 1)
            verdict = "node " + std::to_string(core->rank) + " is closing";
    }
    if (verdict.empty()) {
        fd.release();  // the link's now; its outbound sends the welcome
        return;
    }
    if (verdict == duplicate_reason) answer_refusal(verdict);  // the losing half of a crossing: no fault
    else refuse(verdict);
}

void run_connector(std::shared_ptr<node_core> core, int peer) {
    connect_result result{peer, -1, false, {}};
    const auto deadline = clock::now() + core->options.connect_timeout;
    try {
        endpoint at;
        if (core->options.nameserver) {
            at = lookup(*core->options.nameserver, core->options.job, peer, deadline);
        } else if (peer < static_cast<int>(core->options.peers.size())) {
            at = core->options.peers[static_cast<std::size_t>(peer)];
        } else {
            throw net_error("no address for node " + std::to_string(peer) + ": no nameserver and no peers table entry");
        }
        const std::string what = "connection to " + core->peer_name(peer) + " at " + at.str();
        unique_fd fd = connect_to(at, deadline);
        core->to_switch.writer().write(connector_connected{peer});
        const std::string body = core->options.job + "\n" + core->options.token;
        const auto h = header::hello(static_cast<std::uint32_t>(core->rank), static_cast<std::uint32_t>(body.size()));
        const auto bytes = encode_frame(h, body);
        write_all(fd.get(), bytes.data(), bytes.size(), deadline, what);
        auto [answer, text] = read_frame(fd.get(), deadline, what);
        if (answer.op == opcode::refuse) {
            if (text == duplicate_reason) result.duplicate = true;
            else throw net_error(what + " refused: " + text);
        } else if (answer.op != opcode::welcome) {
            throw net_error(what + ": expected welcome, got " + describe(answer.op));
        } else if (text != core->options.token) {
            throw net_error(what + ": the peer does not know this job's token");
        } else if (static_cast<int>(answer.source) != peer) {
            throw net_error(what + ": answered by node " + std::to_string(answer.source));
        } else {
            result.fd = fd.release();
        }
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
