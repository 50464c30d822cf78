#pragma once
// The decoder of one connection's byte stream after the handshake: it always
// knows how many bytes it needs next, and cuts what arrives into messages.
//
//   std::size_t room;
//   std::byte* at = reader.space(room);      // read at most `room` bytes here
//   reader.arrived(n, out);                  // complete messages appended to out
//
// Reads may split a frame anywhere or carry several frames at once. Unparsed
// bytes wait in a read buffer of read_capacity; a payload that does not fit
// there is read straight into its own block (no copy), or into the buffer a
// receiver named for it (a landing). Data, the flow
// control frames (credit, ask_credit: their sums wait in take_credit() and
// take_asked()) and goodbye are the only frames allowed; a frame that claims
// another source, any frame after goodbye, or a malformed header throws
// frame_error naming the fault, after every message complete before it was
// appended to `out`.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "net/detail/landing_table.hpp"
#include "net/errors.hpp"
#include "net/frame.hpp"
#include "net/message.hpp"

namespace csp::net {

class frame_reader {
public:
    static constexpr std::size_t read_capacity = 256 * 1024;

    // `landings`: buffers receivers named for their messages (landing.hpp),
    // where a fitting payload is read instead of into a block of its own.
    frame_reader(std::uint32_t max_frame, int peer, detail::landing_table* landings = nullptr)
        : max_frame_(max_frame), peer_(peer), buf_(new std::byte[read_capacity]), landings_(landings) {}
    frame_reader(const frame_reader&) = delete;
    frame_reader& operator=(const frame_reader&) = delete;
    // A payload left half-read in a landing (the connection ended) lets the
    // landing go: its receiver gets the link's failure instead.
    ~frame_reader() {
        if (large_landing_) landings_->written(peer_, *large_landing_);
    }

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
                if (large_landing_) landings_->written(peer_, *std::exchange(large_landing_, std::nullopt));
            }
            return;
        }
        end_ += n;
        while (end_ - begin_ >= header::size) {
            const header h = header::decode(buf_.get() + begin_, max_frame_);
            check(h);
            if (h.op != opcode::data) {  // length 0 (header::decode)
                if (h.op == opcode::goodbye) {
                    goodbye_ = true;
                } else if (h.op == opcode::credit) {
                    // Saturates rather than wraps, so an absurd sum is refused (flow_control.hpp).
                    credit_ = credit_ + h.tag < credit_ ? UINT64_MAX : credit_ + h.tag;
                } else {
                    ++asked_;
                }
                begin_ += header::size;
                continue;
            }
            const std::size_t have = end_ - begin_ - header::size;
            const bool whole = have >= h.length;
            if (!whole && header::size + h.length <= read_capacity) return;  // the rest is still on its way
            message m{static_cast<int>(h.source), h.port, h.tag, {}, h.type, {}, h.sequence};
            std::byte* dst = h.length && landings_ ? landings_->claim(peer_, h) : nullptr;
            const bool landed = dst != nullptr;
            // A landed payload is the receiver's buffer: the message only points there.
            if (landed) m.body = payload::adopt(std::shared_ptr<void>(), dst, h.length);
            else m.body = payload::allocate(h.length, dst);
            if (whole) {
                if (h.length) std::memcpy(dst, buf_.get() + begin_ + header::size, h.length);
                begin_ += header::size + h.length;
                out.push_back(std::move(m));
                if (landed) landings_->written(peer_, h);
            } else {
                if (have) std::memcpy(dst, buf_.get() + begin_ + header::size, have);
                begin_ = end_ = 0;
                large_ = std::move(m);
                large_dst_ = dst;
                large_have_ = have;
                if (landed) large_landing_ = h;
                return;
            }
        }
    }

    bool goodbye() const noexcept { return goodbye_; }
    // Bytes the peer credited since the last call / how many times it asked for credit.
    std::uint64_t take_credit() noexcept { return std::exchange(credit_, 0); }
    std::uint64_t take_asked() noexcept { return std::exchange(asked_, 0); }

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
        if (h.op != opcode::data && h.op != opcode::goodbye && h.op != opcode::credit && h.op != opcode::ask_credit)
            throw frame_error(std::string("unexpected ") + describe(h.op) + " frame after the handshake");
        if (h.op == opcode::goodbye && h.length != 0)
            throw frame_error("malformed goodbye frame with a payload of " + std::to_string(h.length) + " bytes");
        if (static_cast<int>(h.source) != peer_)
            throw frame_error("frame claims to come from node " + std::to_string(h.source) +
                              " on the connection from node " + std::to_string(peer_));
        if (goodbye_) throw frame_error(std::string(describe(h.op)) + " frame after goodbye");
    }

    std::uint32_t max_frame_;
    const int peer_;
    std::unique_ptr<std::byte[]> buf_;
    std::size_t begin_ = 0, end_ = 0;
    std::optional<message> large_;
    std::byte* large_dst_ = nullptr;
    std::size_t large_have_ = 0;
    detail::landing_table* landings_;
    std::optional<header> large_landing_;  // large_'s header, when its payload goes into a landing
    bool goodbye_ = false;
    std::uint64_t credit_ = 0;
    std::uint64_t asked_ = 0;
};


}  // namespace csp::net
