#pragma once
// The one narrow hook that tracing and model recording use.
//
// Every completed channel operation and barrier sync, every alternation
// choice and the start and end of every par, seq and process pass through
// notify(). With no
// observer installed the cost is one load and a predictable branch.
//
// Lifetime rule. An observer must stay alive until it is uninstalled AND
// every event that may have loaded it has returned: set_observer(nullptr)
// (or another observer) stops new events, but an event already past its
// load may still be inside on_event on another thread. Uninstall once the
// runtimes that could report to it have ended (the recorder and the timeline
// are uninstalled by take() / stop(), after run() returned), or keep the
// observer alive for the rest of the program. The pointer is published with
// release and loaded with acquire, so an observer is seen fully constructed.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "csp/buffer.hpp"

namespace csp {

class guard;
class barrier;

namespace detail {
class channel_base;
class process_record;
class view_access;
}  // namespace detail

// A process as an observer sees it; valid only during on_event (or, from
// of_caller(), while the calling process runs).
class process_view {
public:
    process_view() = default;
    // The calling process, or an empty view outside any process.
    static process_view of_caller() noexcept;

    explicit operator bool() const noexcept { return p_ != nullptr; }
    // Identifies the process while it lives (an address: may be reused later).
    const void* key() const noexcept { return p_; }
    // The process's name: the user's, or its place in the par tree ("main.1.0").
    std::string name() const;
    // The process whose par started it (empty for roots and daemons), and
    // its branch index there.
    process_view parent() const noexcept;
    std::size_t index() const noexcept;
    // A daemon process (process_group.hpp): one that waits for requests by
    // design, like the IO scheduler or a node's network processes.
    bool daemon() const noexcept;

private:
    explicit process_view(const detail::process_record* p) noexcept : p_(p) {}
    const detail::process_record* p_ = nullptr;
    friend class detail::view_access;
};

// A channel as an observer sees it.
class channel_view {
public:
    channel_view() = default;
    explicit operator bool() const noexcept { return c_ != nullptr; }
    // Unique for the life of the program (never reused).
    std::uint64_t id() const noexcept;
    // The name given by the user ("" if none), and the label reports use
    // (the name, or "channel#12").
    const std::string& name() const noexcept;
    std::string label() const;
    const buffer& buffering() const noexcept;

private:
    explicit channel_view(const detail::channel_base* c) noexcept : c_(c) {}
    const detail::channel_base* c_ = nullptr;
    friend class detail::view_access;
};

// One guard of an alternation as an observer sees it.
struct offer {
    bool enabled = false;  // its precondition held: it took part
    channel_view channel;  // the channel end it offered; empty for a timeout, skip, an IO watch...
    bool write = false;    // it offered to write (an output guard)
};

// A message between two nodes of a job (net/), as a node reports it to the
// observer. A message sent while its node was observed carries the number
// its sender gave it (1..65535, cyclically): its send and its receive are
// the events with one (from, to, sequence), taken in order of occurrence
// (the same sequence comes round again only after 65,535 more sends), even
// when several processes send and take with one port and tag at once.
// Without a sequence (0: the sender was not observed), the k-th
// message_sent and the k-th message_received with one (from, to, port,
// tag) are the same message, as a link keeps its order.
struct message_ref {
    int from = 0;  // the sending node's rank
    int to = 0;    // the receiving node's rank
    std::uint32_t port = 0;
    std::uint64_t tag = 0;
    std::size_t bytes = 0;
    std::uint16_t sequence = 0;
};

struct event {
    enum class kind : std::uint8_t {
        channel_read,   // channel: the channel
        channel_write,  // channel: the channel
        alt_chose,      // detail: index of the chosen guard; offers: every guard
        par_begin,      // detail: number of branches
        par_end,
        seq_begin,      // detail: number of steps
        seq_end,
        process_begin,
        process_end,
        message_sent,      // message: what the calling process sent to another node
        message_received,  // message: what the calling process took from a port
        barrier_sync,      // barrier: the barrier; detail: the phase it completed (its number
                           // before: every process of one phase reports the same number)
    };
    kind what;
    process_view process;  // empty outside any process
    channel_view channel;  // for channel events, else empty
    std::size_t detail;
    std::span<const offer> offers = {};  // alt_chose: one per guard, in the alternation's order
    const message_ref* message = nullptr;  // message_sent, message_received
    const csp::barrier* barrier = nullptr;  // barrier_sync (id(), label())
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
    if (observer* o = installed_observer.load(std::memory_order_acquire)) [[unlikely]]
        notify_slow(o, what, ch, detail);
}

// The calling process's sync on b completed `phase`.
void notify_sync_slow(observer* o, const barrier& b, std::uint64_t phase);
inline void notify_sync(const barrier& b, std::uint64_t phase) {
    if (observer* o = installed_observer.load(std::memory_order_acquire)) [[unlikely]]
        notify_sync_slow(o, b, phase);
}

// An alternation chose guards[chosen] (after its channel event, if any).
void notify_chose_slow(observer* o, std::span<guard* const> guards, std::size_t chosen);
inline void notify_chose(std::span<guard* const> guards, std::size_t chosen) {
    if (observer* o = installed_observer.load(std::memory_order_acquire)) [[unlikely]]
        notify_chose_slow(o, guards, chosen);
}
}  // namespace detail

// For the layer that moves messages between nodes: reports one, from the
// calling process, to the installed observer (one load when there is none).
void notify_message_slow(observer* o, event::kind what, const message_ref& m);
// Whether an observer is installed: a caller may skip preparing an event
// nobody receives.
inline bool observed() noexcept { return detail::installed_observer.load(std::memory_order_relaxed) != nullptr; }

inline void notify_message(event::kind what, const message_ref& m) {
    if (observer* o = detail::installed_observer.load(std::memory_order_acquire)) [[unlikely]]
        notify_message_slow(o, what, m);
}

}  // namespace csp
