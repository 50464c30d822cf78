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
// receiver named for it (a landing). A payload of slice_from bytes or more
// that arrives whole in the read buffer, aligned, is not copied either: its
// message shares the buffer (a slice), which then lives as long as the
// message does; smaller ones are copied into blocks of their own, so that a
// kept small message never holds a whole buffer. Data, the flow
// control frames (credit, ask_credit: their sums wait in take_credit() and
// take_asked()) and goodbye (its payload kept in farewell()) are the only
// frames allowed; a frame that claims
// another source, any frame after goodbye, or a malformed header throws
// frame_error naming the fault, after every message complete before it was
// appended to `out`.
#include <algorithm>
#include <atomic>
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
    static_assert(header::size + header::max_farewell <= read_capacity, "a goodbye is read whole into the buffer");
    // Payloads from this size share the read buffer instead of being copied
    // out of it: a kept slice holds at most 16 times its own size.
    static constexpr std::size_t slice_from = 16 * 1024;
    // Buffers still shared by slices when the reader moved on, kept to be
    // reused once their messages are gone (beyond these, a new one).
    static constexpr std::size_t spare_buffers = 2;

    // `landings`: buffers receivers named for their messages (landing.hpp),
    // where a fitting payload is read instead of into a block of its own.
    frame_reader(std::uint32_t max_frame, int peer, detail::landing_table* landings = nullptr)
        : max_frame_(max_frame), peer_(peer), buf_(new_buffer()), landings_(landings) {}
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
        // Bytes before end_ may be slices of messages still alive: they are
        // never written again while the buffer is shared. The unparsed rest
        // [begin_, end_) moves to the front, here or into another buffer,
        // only when the buffer is drained (begin_ == end_) or too full to
        // take a header.
        const bool drained = begin_ == end_, full = read_capacity - end_ < header::size;
        if (drained || full) {
            if (!shared()) move_rest_to(buf_);
            else if (full || read_capacity - end_ < read_capacity / 4) move_to_another_buffer();
            // else: drained, shared, with room enough: read on after the slices
        }
        n = read_capacity - end_;
        // After a payload too large for the buffer, the next one is likely
        // large too (a stream of big blocks): reading only its header first
        // lets the whole payload go straight to its block, where a full
        // read would have brought up to a buffer of it here to be copied.
        if (after_large_ && drained) n = std::min(n, header::size);
        return base(buf_) + end_;
    }

    // n bytes arrived at space(); complete messages are appended to `out`.
    void arrived(std::size_t n, std::vector<message>& out) {
        if (large_) {
            large_have_ += n;
            if (large_have_ == large_->size()) {
                out.push_back(std::move(*large_));
                large_.reset();
                after_large_ = true;
                if (large_landing_) landings_->written(peer_, *std::exchange(large_landing_, std::nullopt));
            }
            return;
        }
        end_ += n;
        while (end_ - begin_ >= header::size) {
            const header h = header::decode(base(buf_) + begin_, max_frame_);
            check(h);
            if (h.op == opcode::goodbye) {
                // At most max_farewell: it waits whole in the read buffer.
                if (end_ - begin_ - header::size < h.length) return;
                farewell_.assign(reinterpret_cast<const char*>(base(buf_) + begin_ + header::size), h.length);
                goodbye_ = true;
                begin_ += header::size + h.length;
                continue;
            }
            if (h.op != opcode::data) {  // length 0 (header::decode)
                if (h.op == opcode::credit) {
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
            after_large_ = false;
            if (!whole && header::size + h.length <= read_capacity) return;  // the rest is still on its way
            message m{static_cast<int>(h.source), h.port, h.tag, {}, h.type, {}, h.sequence};
            const std::byte* src = base(buf_) + begin_ + header::size;
            std::byte* dst = h.length && landings_ ? landings_->claim(peer_, h) : nullptr;
            const bool landed = dst != nullptr;
            // A landed payload is the receiver's buffer: the message only points there.
            if (landed) {
                m.body = payload::adopt(std::shared_ptr<void>(), dst, h.length);
            } else if (whole && h.length >= slice_from && aligned(src)) {
                m.body = payload::adopt(buf_, src, h.length);
                ++slices_;
            } else {
                m.body = payload::allocate(h.length, dst);
            }
            if (whole) {
                if (dst) std::memcpy(dst, src, h.length);
                begin_ += header::size + h.length;
                out.push_back(std::move(m));
                if (landed) landings_->written(peer_, h);
            } else {
                if (have) std::memcpy(dst, src, have);
                begin_ = end_;  // drained: space() moves to the front when no slice is left there
                large_ = std::move(m);
                large_dst_ = dst;
                large_have_ = have;
                if (landed) large_landing_ = h;
                return;
            }
        }
    }

    bool goodbye() const noexcept { return goodbye_; }
    // The goodbye's payload (frame.hpp): empty, or the job's deadlock report.
    const std::string& farewell() const noexcept { return farewell_; }
    // Payloads handed out as slices of the read buffer so far (not copied).
    std::uint64_t slices() const noexcept { return slices_; }
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
    // The read buffer, aligned like a payload block (payload.hpp), so that a
    // slice at an aligned offset is as aligned as any other payload.
    using buffer = std::shared_ptr<std::max_align_t[]>;
    static buffer new_buffer() {
        return std::make_shared_for_overwrite<std::max_align_t[]>(read_capacity / sizeof(std::max_align_t));
    }
    static std::byte* base(const buffer& b) noexcept { return reinterpret_cast<std::byte*>(b.get()); }
    static bool aligned(const std::byte* p) noexcept {
        return reinterpret_cast<std::uintptr_t>(p) % alignof(std::max_align_t) == 0;
    }
    // Whether a message still holds a slice of `b`. When not, the acquire
    // fence orders the reader's next writes after everything the last
    // holder (on any thread) did with the bytes before it let go.
    static bool shared(const buffer& b) noexcept {
        if (b.use_count() > 1) return true;
        std::atomic_thread_fence(std::memory_order_acquire);
        return false;
    }
    bool shared() const noexcept { return shared(buf_); }

    // The unparsed bytes [begin_, end_) to the front of `into` (buf_ itself,
    // or the buffer about to replace it).
    void move_rest_to(const buffer& into) noexcept {
        std::memmove(base(into), base(buf_) + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
    }

    // The unparsed bytes go to the front of a buffer nobody shares: a spare
    // whose slices are all gone, or a new one. The current buffer becomes a
    // spare, or is left to its slices when there are spares enough.
    void move_to_another_buffer() {
        buffer next;
        auto free = std::find_if(spares_.begin(), spares_.end(), [](const buffer& b) { return !shared(b); });
        if (free != spares_.end()) next = std::move(*free);
        else next = new_buffer();
        move_rest_to(next);
        if (free != spares_.end()) *free = std::move(buf_);
        else if (spares_.size() < spare_buffers) spares_.push_back(std::move(buf_));
        buf_ = std::move(next);
    }

    void check(const header& h) const {
        if (h.op != opcode::data && h.op != opcode::goodbye && h.op != opcode::credit && h.op != opcode::ask_credit)
            throw frame_error(std::string("unexpected ") + describe(h.op) + " frame after the handshake");
        if (static_cast<int>(h.source) != peer_)
            throw frame_error("frame claims to come from node " + std::to_string(h.source) +
                              " on the connection from node " + std::to_string(peer_));
        if (goodbye_) throw frame_error(std::string(describe(h.op)) + " frame after goodbye");
    }

    std::uint32_t max_frame_;
    const int peer_;
    buffer buf_;
    std::vector<buffer> spares_;
    std::size_t begin_ = 0, end_ = 0;
    std::optional<message> large_;
    std::byte* large_dst_ = nullptr;
    std::size_t large_have_ = 0;
    detail::landing_table* landings_;
    std::optional<header> large_landing_;  // large_'s header, when its payload goes into a landing
    bool goodbye_ = false;
    std::string farewell_;
    bool after_large_ = false;  // the last data frame was larger than the buffer
    std::uint64_t slices_ = 0;
    std::uint64_t credit_ = 0;
    std::uint64_t asked_ = 0;
};


}  // namespace csp::net
