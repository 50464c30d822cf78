#pragma once
// Tags keep the messages of different collective calls apart.
//
// Every collective call draws a fresh tag from its communicator. A tag is
// 64 bits, laid out so that concurrent calls never share one:
//
//   bits 63..45  stream     which sequence of calls (chosen by the caller)
//   bits 44..40  call       which collective drew it (call_code), 0 if none
//   bits 39..36  algorithm  which of its algorithms (algorithm_info::code)
//   bits 35..8   sequence   the call's number within its stream, per rank,
//                           counted modulo 2^28
//   bits  7..0   step       a phase inside one call (reduce, then broadcast)
//
// The rule that makes tags agree across ranks is MPI's: every rank of a
// communicator makes the calls of one stream in the same order (a rank with
// no part in a call still makes it, and returns at once). Calls that run at
// the same time in one rank, say two reductions on overlapping groups, use
// different streams; no communicator per operation is needed.
//
// A program that breaks the rule (rank 0 broadcasts where rank 1 reduces)
// must not get an answer: the call code makes the two calls' tags differ,
// so neither takes the other's messages, and a receive of a call for which
// the other collective's message came throws a usage_error naming both
// (mailbox.hpp), which revokes the stream at every rank. The same holds
// for ranks that make one collective but choose different algorithms for
// it, as ranks whose values' sizes lie on either side of a bound of the
// selection table do: the algorithm bits keep them apart, so one never
// folds a block of another's as if it were a whole value. Calls that no
// longer line up (they drew different numbers of tags) wait, and the
// job-wide deadlock report (or a peer's departure) ends them.
#include <atomic>
#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>
#include <string_view>

#include "csp/error.hpp"

namespace csp::collectives {

// A sequence of collective calls whose order every rank agrees on.
struct stream {
    std::uint32_t id = 0;
    // Ids below this. The ids above are the sub-groups' (context_pool.hpp).
    static constexpr std::uint32_t limit = 1u << 16;
};

// The collectives a tag's call bits name, by code (the index plus one).
inline constexpr std::string_view call_names[] = {"allgather", "allreduce", "alltoall", "barrier",
                                                  "broadcast", "exscan",    "gather",   "put_get",
                                                  "reduce",    "reduce_scatter", "scan", "scatter"};

// The call code of a collective (algorithm_info::collective); 31 for one
// not in call_names, which still tells it from those.
constexpr std::uint8_t call_code(std::string_view collective) {
    for (std::size_t i = 0; i < std::size(call_names); ++i)
        if (call_names[i] == collective) return static_cast<std::uint8_t>(i + 1);
    return 31;
}
// The code of a revocation (revocation.hpp): a rank whose call failed tells
// the others, with the call's tag marked so, that the stream is unusable
// from that call on. No collective draws it.
inline constexpr std::uint8_t revocation_code = 30;

// What an error says of ranks whose calls break the rule above.
inline constexpr std::string_view same_calls_rule = "every rank must make the same collective calls in the same order";

// The collective a call code names ("" for 0, "a collective" for 31).
constexpr std::string_view call_name(std::uint8_t code) {
    if (code == 0) return "";
    return code <= std::size(call_names) ? call_names[code - 1] : "a collective";
}

class tag {
public:
    static constexpr int stream_shift = 45, call_shift = 40, algorithm_shift = 36;
    static constexpr std::uint64_t call_mask = std::uint64_t{0x1f} << call_shift;
    static constexpr std::uint64_t algorithm_mask = std::uint64_t{0xf} << algorithm_shift;
    static constexpr std::uint32_t sequence_mask = (1u << (algorithm_shift - 8)) - 1;

    constexpr tag() = default;
    constexpr tag(std::uint32_t stream_id, std::uint32_t sequence, std::uint8_t step = 0)
        : bits_((std::uint64_t{stream_id} << stream_shift) | (std::uint64_t{sequence & sequence_mask} << 8) | step) {}

    // The same call's tag for phase `s`.
    constexpr tag step(std::uint8_t s) const { return from_bits((bits_ & ~std::uint64_t{0xff}) | s); }
    // The same tag marked as drawn by collective `code` (call_code).
    constexpr tag of_call(std::uint8_t code) const {
        return from_bits((bits_ & ~call_mask) | (std::uint64_t{code} << call_shift & call_mask));
    }
    // The same tag marked as drawn by that collective's algorithm `code`.
    constexpr tag of_algorithm(std::uint8_t code) const {
        return from_bits((bits_ & ~algorithm_mask) | (std::uint64_t{code} << algorithm_shift & algorithm_mask));
    }

    constexpr std::uint64_t bits() const noexcept { return bits_; }
    constexpr std::uint32_t stream_id() const noexcept { return static_cast<std::uint32_t>(bits_ >> stream_shift); }
    constexpr std::uint8_t call() const noexcept {
        return static_cast<std::uint8_t>((bits_ & call_mask) >> call_shift);
    }
    constexpr std::uint8_t algorithm() const noexcept {
        return static_cast<std::uint8_t>((bits_ & algorithm_mask) >> algorithm_shift);
    }
    constexpr std::uint32_t sequence() const noexcept {
        return static_cast<std::uint32_t>(bits_ >> 8) & sequence_mask;
    }
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
// draw tags at once: the first few streams, which nearly every call uses,
// count in atomics; the others under a lock.
class tag_counter {
public:
    tag next(stream s) {
        check(s);
        if (s.id < fast) return tag(s.id, fast_[s.id].fetch_add(1, std::memory_order_relaxed));
        std::lock_guard lk(lock_);
        return tag(s.id, counts_[s.id]++);
    }
    // The tag next(s) would draw, without drawing it.
    tag upcoming(stream s) {
        check(s);
        if (s.id < fast) return tag(s.id, fast_[s.id].load(std::memory_order_relaxed));
        std::lock_guard lk(lock_);
        const auto it = counts_.find(s.id);
        return tag(s.id, it == counts_.end() ? 0 : it->second);
    }

private:
    static void check(stream s) {
        if (s.id >= stream::limit)
            throw usage_error("collective stream id " + std::to_string(s.id) + " is out of range (at most " +
                              std::to_string(stream::limit - 1) + ")");
    }
    static constexpr std::uint32_t fast = 4;
    std::atomic<std::uint32_t> fast_[fast]{};
    std::mutex lock_;
    std::map<std::uint32_t, std::uint32_t> counts_;
};

}  // namespace csp::collectives
