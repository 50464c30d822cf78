#pragma once
// The one narrow hook that tracing and model recording use.
//
// Every completed channel operation, every alternation choice and the start
// and end of every par, seq and process pass through notify(). With no
// observer installed the cost is one relaxed load and a predictable branch.
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace csp {

namespace detail {
class channel_base;
class process_record;
}  // namespace detail

struct event {
    enum class kind : std::uint8_t {
        channel_read,   // subject: the channel
        channel_write,  // subject: the channel
        alt_chose,      // detail: index of the chosen guard
        par_begin,      // detail: number of branches
        par_end,
        seq_begin,      // detail: number of steps
        seq_end,
        process_begin,
        process_end,
    };
    kind what;
    const detail::process_record* process;  // nullptr outside any process
    const detail::channel_base* channel;    // for channel events, else nullptr
    std::size_t detail;
};

// Receives events from any thread of any runtime; implementations must be
// thread-safe. Install with set_observer(); pass nullptr to remove.
class observer {
public:
    virtual ~observer() = default;
    virtual void on_event(const event& e) = 0;
};

namespace detail {
inline std::atomic<observer*> installed_observer{nullptr};
}

// Returns the previous observer.
inline observer* set_observer(observer* o) noexcept {
    return detail::installed_observer.exchange(o, std::memory_order_acq_rel);
}

namespace detail {
void notify_slow(observer* o, event::kind what, const channel_base* ch, std::size_t detail);

inline void notify(event::kind what, const channel_base* ch = nullptr, std::size_t detail = 0) {
    if (observer* o = installed_observer.load(std::memory_order_relaxed)) [[unlikely]]
        notify_slow(o, what, ch, detail);
}
}  // namespace detail

}  // namespace csp
