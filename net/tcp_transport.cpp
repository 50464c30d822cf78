#include "net/tcp_transport.hpp"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <vector>

#include "csp/alt.hpp"
#include "iosched/io_error.hpp"
#include "iosched/watch.hpp"
#include "net/errors.hpp"
#include "net/frame_reader.hpp"

namespace csp::net::detail {
namespace {

constexpr std::size_t max_batch_frames = 64;
constexpr std::size_t max_batch_bytes = 1 << 20;

}  // namespace

void run_tcp_inbound(std::shared_ptr<node_core> core, int peer, int fd) {
    auto to_switch = core->to_switch.writer();
    frame_reader frames(core->options.max_frame, peer, &core->landings);
    std::vector<message> batch;
    link_down end{peer, false, {}};
    // Messages go straight into their ports' channels, in order of arrival.
    node_core::port_writers ports(*core);
    // Credit and asks from the peer go to the flow control after the
    // messages that came with them; a credit it refuses ends the link.
    auto flush = [&] {
        for (message& m : batch) {
            ports.deliver(std::move(m));
        }
        batch.clear();
        if (const std::uint64_t credit = frames.take_credit()) {
            core->traffic_in.fetch_add(credit, std::memory_order_relaxed);
            core->flow.returned(peer, credit);
        }
        if (const std::uint64_t asks = frames.take_asked()) {
            core->traffic_in.fetch_add(asks, std::memory_order_relaxed);
            core->flow.asked(peer);
        }
    };
    try {
        csp::io::watch readable(fd, csp::io::interest::read);
        for (;;) {
            std::size_t room;
            std::byte* at = frames.space(room);
            const ssize_t n = ::read(fd, at, room);
            if (n > 0) {
                try {
                    frames.arrived(static_cast<std::size_t>(n), batch);
                } catch (...) {
                    flush();  // what arrived intact before the fault is delivered
                    throw;
                }
                flush();
                // A short read drained the socket: wait rather than read again
                // for an EAGAIN (readiness is level-triggered, nothing is missed).
                if (static_cast<std::size_t>(n) < room) readable.wait();
            } else if (n == 0) {
                if (std::string partial = frames.unfinished(); !partial.empty()) throw frame_error(partial);
                end.clean = frames.goodbye();
                if (end.clean) end.farewell = frames.farewell();
                else end.reason = connection_lost(0);
                break;
            } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
                readable.wait();
            } else if (errno != EINTR) {
                end.reason = connection_lost(errno);
                break;
            }
        }
    } catch (const frame_error& e) {
        end.reason = e.what();
    } catch (const csp::io::io_error& e) {
        // The wait may meet the end first (POLLERR with the socket's error).
        end.reason = connection_lost(e);
    } catch (const std::exception& e) {
        end.reason = e.what();
    }
    to_switch.write(std::move(end));
    to_switch.write(link_process_exited{peer});
}

void run_tcp_outbound(std::shared_ptr<node_core> core, int peer, int fd, csp::reader<outgoing> queue) {
    auto to_switch = core->to_switch.writer();
    const std::uint32_t peer_max_frame = core->flow.peer_max_frame(peer);  // learnt in the handshake, before up
    std::optional<csp::io::watch> writable;  // registered on the first full socket
    std::vector<outgoing> batch;
    std::vector<std::array<std::byte, header::size>> heads(max_batch_frames + 1);
    std::vector<iovec> iov;
    iov.reserve(2 * (max_batch_frames + 1));

    // Writes iov[from..] entirely, waiting when the socket is full.
    auto write_out = [&] {
        std::size_t i = 0;
        while (i < iov.size()) {
            msghdr mh{};
            mh.msg_iov = iov.data() + i;
            mh.msg_iovlen = std::min<std::size_t>(iov.size() - i, IOV_MAX);
            const ssize_t n = ::sendmsg(fd, &mh, MSG_NOSIGNAL);
            if (n < 0) {
                if (errno == EINTR) continue;
                if (errno != EAGAIN && errno != EWOULDBLOCK)
                    throw net_error(errno == EPIPE || errno == ECONNRESET
                                        ? connection_lost(errno)
                                        : "writing to the connection: " + error_text(errno));
                if (!writable) writable.emplace(fd, csp::io::interest::write);
                writable->wait();
                continue;
            }
            auto left = static_cast<std::size_t>(n);
            while (i < iov.size() && left >= iov[i].iov_len) left -= iov[i++].iov_len;
            if (left) {
                iov[i].iov_base = static_cast<char*>(iov[i].iov_base) + left;
                iov[i].iov_len -= left;
            }
        }
    };

    // How the queue ended the link: goodbye (say it, then end of file) or
    // abort (the switch has ended the link already). A failure is reported.
    auto ended_by = outgoing::control::none;
    try {
        while (ended_by == outgoing::control::none) {
            if (batch.empty()) batch.push_back(queue.read());
            std::size_t bytes = batch.back().body.size();
            outgoing more;
            while (batch.size() < max_batch_frames && bytes < max_batch_bytes &&
                   batch.back().ctl == outgoing::control::none &&
                   csp::select(csp::input(queue, more), csp::skip()) == 0) {
                bytes += more.body.size();
                batch.push_back(std::move(more));
            }
            iov.clear();
            for (std::size_t k = 0; k < batch.size() && ended_by == outgoing::control::none; ++k) {
                outgoing& f = batch[k];
                ended_by = f.ctl;
                if (f.ctl == outgoing::control::abort) break;
                if (dropped_over_peer_max_frame(*core, peer, peer_max_frame, f)) continue;
                f.head.encode(heads[k].data());
                iov.push_back({heads[k].data(), header::size});
                if (f.body.size()) iov.push_back({const_cast<std::byte*>(f.body.data()), f.body.size()});
            }
            if (ended_by != outgoing::control::abort) write_out();
            batch.clear();
        }
        if (ended_by == outgoing::control::goodbye) ::shutdown(fd, SHUT_WR);  // the peer reads end of file next
    } catch (const csp::io::io_error& e) {
        to_switch.write(link_down{peer, false, connection_lost(e)});
    } catch (const std::exception& e) {
        to_switch.write(link_down{peer, false, e.what()});
    }
    to_switch.write(link_process_exited{peer});
}

}  // namespace csp::net::detail
