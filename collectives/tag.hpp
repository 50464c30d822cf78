#pragma once
// Tags keep the messages of different collective calls apart.
//
// Every collective call draws a fresh tag from its communicator. A tag is
// 64 bits, laid out so that concurrent calls never share one:
//
//   bits 63..40  stream     which sequence of calls (chosen by the caller)
//   bits 39..8   sequence   the call's number within its stream, per rank
//   bits  7..0   step       a phase inside one call (reduce, then broadcast)
//
// The rule that makes tags agree across ranks is MPI's: every rank of a
// communicator makes the calls of one stream in the same order (a rank with
// no part in a call still makes it, and returns at once). Calls that run at
// the same time in one rank, say two reductions on overlapping groups, use
// different streams; no communicator per operation is needed.
#include <cstdint>
#include <map>
#include <mutex>

#include "csp/error.hpp"

namespace csp::collectives {

// A sequence of collective calls whose order every rank agrees on.
struct stream {
    std::uint32_t id = 0;
    // Ids below this. The ids above are the sub-groups' (context_pool.hpp),
    // and the last one is reserved for the transport's own use.
    static constexpr std::uint32_t limit = 1u << 23;
};

class tag {
public:
    constexpr tag() = default;
    constexpr tag(std::uint32_t stream_id, std::uint32_t sequence, std::uint8_t step = 0)
        : bits_((std::uint64_t{stream_id} << 40) | (std::uint64_t{sequence} << 8) | step) {}

    // The same call's tag for phase `s`.
    constexpr tag step(std::uint8_t s) const { return from_bits((bits_ & ~std::uint64_t{0xff}) | s); }

    constexpr std::uint64_t bits() const noexcept { return bits_; }
    constexpr std::uint32_t stream_id() const noexcept { return static_cast<std::uint32_t>(bits_ >> 40); }
    constexpr std::uint32_t sequence() const noexcept { return static_cast<std::uint32_t>(bits_ >> 8); }
    constexpr std::uint8_t phase() const noexcept { return static_cast<std::uint8_t>(bits_); }

    static constexpr tag from_bits(std::uint64_t b) {
        tag t;
        t.bits_ = b;
        return t;
    }
    friend constexpr bool operator==(tag, tag) = default;

private:
    std::uint64_t bits_ = 0;
};

// One rank's call counters, one per stream. Several processes of one rank may
// draw tags at once, hence the lock.
class tag_counter {
public:
    tag next(stream s) {
        if (s.id >= stream::limit)
            throw usage_error("collective stream id " + std::to_string(s.id) + " is out of range (at most " +
                              std::to_string(stream::limit - 1) + ")");
        std::lock_guard lk(lock_);
        return tag(s.id, counts_[s.id]++);
    }

private:
    std::mutex lock_;
    std::map<std::uint32_t, std::uint32_t> counts_;
};

}  // namespace csp::collectives
