#pragma once
// Credit-based flow control: a node keeps at most its window of bytes in
// flight to each peer, so a reader that falls behind bounds the memory of
// both sides instead of the sender filling the receiver's ports.
//
// Sender side, per peer: every data frame is charged its payload plus
// message_overhead (what a queued message costs besides its bytes) when
// send() admits it; the charge stays "in flight" until the receiver credits
// it back. send() admits a frame when nothing is in flight or it fits the
// window, and otherwise waits, first come first served; a frame larger than
// the window therefore goes alone.
//
// Receiver side, per peer: a frame's charge is owed back once a process took
// the message from its port (port.hpp), not when it arrived: what waits in a
// port unread is what the window bounds. Owed bytes are credited in batches
// of a quarter of the peer's window, so a stream of small messages costs one
// credit frame per many thousand. A sender that is blocked asks (ask_credit),
// and the receiver then credits what it owes at once, or with the next take.
//
// Protocol facts that must stay true:
//  1. A peer credits only bytes whose messages it took, so a credit never
//     exceeds what is in flight; a credit that does is a protocol fault.
//  2. A blocked send ends exactly once: admitted, or failed with the peer's
//     error (the peer left or was lost), or failed because the node closed.
//  3. The waiter protocol (csp/waiter.hpp): a blocked send is committed and
//     woken under `lock_`, and the wake is the last touch of its record,
//     which lives on the sender's stack.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "csp/runtime_lock.hpp"
#include "csp/spinlock.hpp"
#include "net/auth.hpp"
#include "net/errors.hpp"

namespace csp::net::detail {

inline constexpr std::uint64_t message_overhead = 128;
inline constexpr std::uint64_t charge_of(std::size_t payload_bytes) noexcept {
    return payload_bytes + message_overhead;
}

enum class admission : std::uint8_t { admitted, window_full };

class flow_control {
public:
    // signal(peer, bytes): queue a credit frame of `bytes` for `peer`, or an
    // ask_credit when `bytes` is 0. Called outside the lock; must not block.
    using signal_fn = std::function<void(int peer, std::uint64_t bytes)>;

    // `threaded`: the node's runtime has several worker threads (or is not
    // known), so the lock is real.
    flow_control(std::uint32_t window, signal_fn signal, bool threaded = true)
        : window_(window), signal_(std::move(signal)), lock_(threaded) {}

    // --- sender side ------------------------------------------------------
    // Admits a frame of `payload_bytes` to `peer`. With `wait`, blocks the
    // calling process until it fits (the first send to wait asks the peer
    // for credit); without, answers window_full. Throws peer_error once the
    // peer left or was lost, usage_error for a frame over the peer's
    // max_frame or after close().
    admission admit(int peer, std::size_t payload_bytes, bool wait);
    // The peer credited `bytes`; a send still blocked after it asks again.
    // Throws frame_error for more than is in flight.
    void returned(int peer, std::uint64_t bytes);
    // Sends to `peer` fail from now on with `error`; blocked ones wake with it.
    void fail(int peer, const std::shared_ptr<const peer_error>& error);
    // Sends fail from now on with usage_error(`why`); blocked ones wake with it.
    void close(const std::string& why);
    // The peer's limits, learnt in the handshake.
    void learnt(int peer, const link_limits& limits);
    // The largest payload the peer accepts; 0 until its handshake.
    std::uint32_t peer_max_frame(int peer) const;
    std::uint64_t in_flight(int peer) const;

    // --- receiver side ----------------------------------------------------
    // A process took a message of `charge` from `peer` out of its port.
    // True if that sent the peer a credit.
    bool taken(int peer, std::uint64_t charge);
    // The peer is blocked and asks: what is owed is credited now, or with
    // the next take if nothing is.
    void asked(int peer);

private:
    struct blocked_send;
    struct peer_state {
        // sender side
        std::uint64_t in_flight = 0;
        std::deque<blocked_send*> blocked;  // oldest first
        std::shared_ptr<const peer_error> failed;
        link_limits limits;  // the peer's; 0 until its handshake
        // receiver side
        std::uint64_t taken = 0, credited = 0;
        bool wanted = false;  // the peer asked and nothing was owed: credit at the next take
    };
    bool fits(const peer_state& p, std::uint64_t charge) const noexcept {
        return p.in_flight == 0 || p.in_flight + charge <= window_;
    }
    // The peer's record, under lock_. The last one looked up is kept: a
    // stream or a ping-pong asks for the same peer at every message, and
    // the map's hash costs a division. Records never move or go.
    peer_state& state(int peer) {
        if (peer != last_peer_ || last_ == nullptr) {
            last_ = &peers_[peer];
            last_peer_ = peer;
        }
        return *last_;
    }
    std::uint64_t owed_now(peer_state& p);
    void grant(peer_state& p);
    // Ends every blocked send of `p` (their outcome set by `outcome`).
    template <class F> void release_all(peer_state& p, F outcome);

    const std::uint32_t window_;
    const signal_fn signal_;
    // Taken twice per message (the sender's admit, the receiver's taken):
    // no lock with one worker thread (a node is used by the processes of one
    // runtime), else a spinlock, whose unlock is a plain store. Nothing
    // waits under it.
    mutable csp::runtime_lock<csp::spinlock> lock_;
    std::unordered_map<int, peer_state> peers_;
    int last_peer_ = 0;  // see state()
    peer_state* last_ = nullptr;
    std::string closed_;  // why sends fail after close(); empty while open
};

}  // namespace csp::net::detail
