#pragma once
// The landings (landing.hpp) a node's TCP links look up: buffers that
// receivers named for one message each, by (peer, port, tag).
//
// Protocol, per entry: added (a receiver named a buffer) -> claimed (a link
// read that message's header and writes its payload there) -> written (the
// message is complete, or its link failed mid-payload) -> gone. remove()
// takes an entry that was not claimed away at once; a claimed one it waits
// for: the link's reading process writes the rest of the payload or fails,
// and either way calls written(). An entry no message claimed stays until
// its receiver removes it.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "net/frame.hpp"

namespace csp::net::detail {

struct landing_key {
    int peer;
    std::uint32_t port;
    std::uint64_t tag;
    bool operator==(const landing_key&) const = default;
};

struct landing_key_hash {
    std::size_t operator()(const landing_key& k) const noexcept {
        return std::hash<std::uint64_t>{}(k.tag ^ (std::uint64_t{k.port} << 32) ^ static_cast<std::uint32_t>(k.peer));
    }
};

class landing_table {
public:
    void add(const landing_key& k, std::byte* at, std::size_t capacity, std::uint32_t type);
    // Where the payload of this data frame from `peer` goes, if a landing
    // fits it (of its type, no longer than the buffer, not claimed yet):
    // that landing is claimed until written(). Else null.
    std::byte* claim(int peer, const header& h);
    // The claimed landing of this frame is done with.
    void written(int peer, const header& h);
    // Ends the landing; waits (yielding) while it is claimed.
    void remove(const landing_key& k);
    // Payloads claimed so far.
    std::size_t landed() const noexcept { return landed_.load(std::memory_order_relaxed); }

private:
    struct entry {
        std::byte* at;
        std::size_t capacity;
        std::uint32_t type;
        bool claimed = false;
    };
    std::mutex lock_;
    std::unordered_map<landing_key, entry, landing_key_hash> entries_;  // under lock_
    // entries_.size(), read without the lock: a link with no landings to
    // look at (every frame over TCP while nobody named a buffer) pays one load.
    std::atomic<std::size_t> count_{0};
    std::atomic<std::size_t> landed_{0};
};

}  // namespace csp::net::detail
