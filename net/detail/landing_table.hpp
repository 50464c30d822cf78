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
    void add(const landing_key& k, std::byte* at, std::size_t capacity, std::uint32_t type) {
        std::lock_guard lk(lock_);
        entries_.insert_or_assign(k, entry{at, capacity, type});
        count_.store(entries_.size(), std::memory_order_relaxed);
    }
    // Where the payload of this data frame from `peer` goes, if a landing
    // fits it (of its type, no longer than the buffer, not claimed yet):
    // that landing is claimed until written(). Else null. Only a payload the
    // receiver would take whole: anything else arrives as usual, and the
    // receive's own checks name what is wrong.
    std::byte* claim(int peer, const header& h) {
        if (count_.load(std::memory_order_relaxed) == 0) return nullptr;
        std::lock_guard lk(lock_);
        auto it = entries_.find(landing_key{peer, h.port, h.tag});
        if (it == entries_.end()) return nullptr;
        entry& e = it->second;
        if (e.claimed || h.op != opcode::data || h.type != e.type || h.length > e.capacity) return nullptr;
        e.claimed = true;
        landed_.fetch_add(1, std::memory_order_relaxed);
        return e.at;
    }
    // The claimed landing of this frame is done with.
    void written(int peer, const header& h) {
        std::lock_guard lk(lock_);
        entries_.erase(landing_key{peer, h.port, h.tag});
        count_.store(entries_.size(), std::memory_order_relaxed);
    }
    // Ends the landing; waits (yielding to the link's reading process) while
    // it is claimed. (Out of line: the reader's side above does not need
    // the runtime.)
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
