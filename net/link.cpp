#include "net/link.hpp"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "csp/alt.hpp"
#include "iosched/watch.hpp"
#include "net/errors.hpp"

namespace csp::net::detail {
namespace {

constexpr std::size_t read_capacity = 256 * 1024;
constexpr std::size_t max_batch_frames = 64;
constexpr std::size_t max_batch_bytes = 1 << 20;

// Cuts the byte stream of one connection into messages. Keeps unparsed bytes
// in buf_[begin_, end_) and, while a large payload is being read in place,
// the message and how much of it has arrived.
class frame_reader {
public:
    frame_reader(node_core& core, int peer) : core_(core), peer_(peer), buf_(new std::byte[read_capacity]) {}

    // Where the next read() should go, and how much it may take.
    std::byte* space(std::size_t& n) {
        if (large_) {
            n = large_->size() - large_have_;
            return large_dst_ + large_have_;
        }
        if (begin_ == end_) begin_ = end_ = 0;
        else if (read_capacity - end_ < header::size) {
            std::memmove(buf_.get(), buf_.get() + begin_, end_ - begin_);
            end_ -= begin_;
            begin_ = 0;
        }
        n = read_capacity - end_;
        return buf_.get() + end_;
    }

    // n bytes arrived at space(); complete messages are appended to `out`.
    void arrived(std::size_t n, std::vector<message>& out) {
        if (large_) {
            large_have_ += n;
            if (large_have_ == large_->size()) {
                out.push_back(std::move(*large_));
                large_.reset();
            }
            return;
        }
        end_ += n;
        while (end_ - begin_ >= header::size) {
            const header h = header::decode(buf_.get() + begin_, core_.options.max_frame);
            check(h);
            if (h.op == opcode::goodbye) {
                goodbye_ = true;
                begin_ += header::size;
                continue;
            }
            message m{static_cast<int>(h.source), h.port, h.tag, {}, {}};
            std::byte* dst;
            m.body = payload::allocate(h.length, dst);
            const std::size_t have = end_ - begin_ - header::size;
            if (have >= h.length) {
                if (h.length) std::memcpy(dst, buf_.get() + begin_ + header::size, h.length);
                begin_ += header::size + h.length;
                out.push_back(std::move(m));
            } else if (header::size + h.length > read_capacity) {
                if (have) std::memcpy(dst, buf_.get() + begin_ + header::size, have);
                begin_ = end_ = 0;
                large_ = std::move(m);
                large_dst_ = dst;
                large_have_ = have;
                return;
            } else {
                return;  // the rest of this frame is still on its way
            }
        }
    }

    bool goodbye() const noexcept { return goodbye_; }

    // At end of file: the bytes of an unfinished frame, if any.
    std::string unfinished() const {
        if (large_)
            return "truncated frame: the connection closed after " + std::to_string(large_have_) + " of " +
                   std::to_string(large_->size()) + " payload bytes";
        if (end_ > begin_) {
            const std::size_t have = end_ - begin_;
            return "truncated frame: the connection closed after " + std::to_string(have) + " bytes of a frame" +
                   (have < header::size ? " header" : "");
        }
        return {};
    }

private:
    void check(const header& h) const {
        if (h.op != opcode::data && h.op != opcode::goodbye)
            throw frame_error(std::string("unexpected ") + describe(h.op) + " frame after the handshake");
        if (h.op == opcode::goodbye && h.length != 0)
            throw frame_error("malformed goodbye frame with a payload of " + std::to_string(h.length) + " bytes");
        if (static_cast<int>(h.source) != peer_)
            throw frame_error("frame claims to come from node " + std::to_string(h.source) +
                              " on the connection from node " + std::to_string(peer_));
        if (goodbye_) throw frame_error("data frame after goodbye");
    }

    node_core& core_;
    const int peer_;
    std::unique_ptr<std::byte[]> buf_;
    std::size_t begin_ = 0, end_ = 0;
    std::optional<message> large_;
    std::byte* large_dst_ = nullptr;
    std::size_t large_have_ = 0;
    bool goodbye_ = false;
};

}  // namespace

void run_inbound(std::shared_ptr<node_core> core, int peer, int fd) {
    auto to_switch = core->to_switch.writer();
    frame_reader frames(*core, peer);
    std::vector<message> batch;
    link_down end{peer, false, {}};
    // Messages go straight into their ports' channels, in order of arrival.
    std::unordered_map<port_id, csp::writer<message>> ports;
    auto flush = [&] {
        for (message& m : batch) {
            auto it = ports.find(m.port);
            if (it == ports.end()) it = ports.emplace(m.port, core->port_channel(m.port).writer()).first;
            it->second.write(std::move(m));
        }
        batch.clear();
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
                if (!end.clean) end.reason = "connection closed without a goodbye (the node died or was killed)";
                break;
            } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
                readable.wait();
            } else if (errno != EINTR) {
                end.reason = "reading from the connection: " + error_text(errno);
                break;
            }
        }
    } catch (const frame_error& e) {
        end.reason = e.what();
    } catch (const std::exception& e) {
        end.reason = e.what();
    }
    to_switch.write(std::move(end));
    to_switch.write(link_process_exited{peer});
}

void run_outbound(std::shared_ptr<node_core> core, int peer, int fd, csp::reader<outgoing> queue,
                  std::optional<outgoing> first) {
    auto to_switch = core->to_switch.writer();
    std::optional<csp::io::watch> writable;  // registered on the first full socket
    std::vector<outgoing> batch;
    std::vector<std::array<std::byte, header::size>> heads(max_batch_frames + 1);
    std::vector<iovec> iov;
    iov.reserve(2 * (max_batch_frames + 1));
    if (first) batch.push_back(std::move(*first));

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
                    throw net_error("writing to the connection: " + error_text(errno));
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
                if (f.ctl == outgoing::control::goodbye) {
                    f.head.op = opcode::goodbye;
                    f.head.length = 0;
                }
                f.head.encode(heads[k].data());
                iov.push_back({heads[k].data(), header::size});
                if (f.body.size()) iov.push_back({const_cast<std::byte*>(f.body.data()), f.body.size()});
            }
            if (ended_by != outgoing::control::abort) write_out();
            batch.clear();
        }
        if (ended_by == outgoing::control::goodbye) ::shutdown(fd, SHUT_WR);  // the peer reads end of file next
    } catch (const std::exception& e) {
        to_switch.write(link_down{peer, false, e.what()});
    }
    to_switch.write(link_process_exited{peer});
}

}  // namespace csp::net::detail
