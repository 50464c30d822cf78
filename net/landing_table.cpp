#include "net/detail/landing_table.hpp"

#include "csp/timer.hpp"

namespace csp::net::detail {

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
