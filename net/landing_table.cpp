#include "net/detail/landing_table.hpp"

#include "csp/timer.hpp"

namespace csp::net::detail {

void landing_table::add(const landing_key& k, std::byte* at, std::size_t capacity, std::uint32_t type) {
    std::lock_guard lk(lock_);
    entries_.insert_or_assign(k, entry{at, capacity, type});
    count_.store(entries_.size(), std::memory_order_relaxed);
}

std::byte* landing_table::claim(int peer, const header& h) {
    if (count_.load(std::memory_order_relaxed) == 0) return nullptr;
    std::lock_guard lk(lock_);
    auto it = entries_.find(landing_key{peer, h.port, h.tag});
    if (it == entries_.end()) return nullptr;
    entry& e = it->second;
    // Only a payload the receiver would take whole; anything else arrives as
    // usual and the receive's own checks name what is wrong.
    if (e.claimed || h.op != opcode::data || h.type != e.type || h.length > e.capacity) return nullptr;
    e.claimed = true;
    landed_.fetch_add(1, std::memory_order_relaxed);
    return e.at;
}

void landing_table::written(int peer, const header& h) {
    std::lock_guard lk(lock_);
    entries_.erase(landing_key{peer, h.port, h.tag});
    count_.store(entries_.size(), std::memory_order_relaxed);
}

void landing_table::remove(const landing_key& k) {
    for (;;) {
        {
            std::lock_guard lk(lock_);
            auto it = entries_.find(k);
            if (it == entries_.end()) return;
            if (!it->second.claimed) {
                entries_.erase(it);
                count_.store(entries_.size(), std::memory_order_relaxed);
                return;
            }
        }
        csp::yield();  // the link's reading process finishes (or fails) the payload
    }
}

}  // namespace csp::net::detail
