#include "net/detail/flow_control.hpp"

#include <optional>

#include "csp/waiter.hpp"

namespace csp::net::detail {

// One send waiting for the window, on the sender's stack.
struct flow_control::blocked_send final : csp::wait_site {
    csp::waiter* w = nullptr;
    int peer = 0;
    std::uint64_t charge = 0;
    std::uint32_t window = 0;
    bool linked = true;                        // still in its peer's queue
    std::shared_ptr<const peer_error> error;   // set when woken by fail()
    std::string usage;                         // set when woken by close()

    void describe(std::string& out) const override {
        out.append("sending to node ")
            .append(std::to_string(peer))
            .append(": waiting for it to take messages (the window of ")
            .append(std::to_string(window))
            .append(" bytes in flight to it is full)");
    }
};

admission flow_control::admit(int peer, std::size_t payload_bytes, bool wait) {
    const std::uint64_t charge = charge_of(payload_bytes);
    blocked_send b;
    std::optional<csp::waiter> w;
    bool first;
    {
        std::lock_guard lk(lock_);
        if (!closed_.empty()) throw usage_error(closed_);
        peer_state& p = state(peer);
        if (p.failed) throw *p.failed;
        if (p.limits.max_frame != 0 && payload_bytes > p.limits.max_frame)
            throw usage_error("send of " + std::to_string(payload_bytes) + " bytes to node " + std::to_string(peer) +
                              ": over its max_frame of " + std::to_string(p.limits.max_frame) +
                              " bytes (the message was not sent; the link goes on)");
        if (p.blocked.empty() && fits(p, charge)) {
            p.in_flight += charge;
            return admission::admitted;
        }
        if (!wait) return admission::window_full;
        w.emplace();
        b.w = &*w;
        b.peer = peer;
        b.charge = charge;
        b.window = window_;
        w->set_site(&b);
        p.blocked.push_back(&b);
        first = p.blocked.size() == 1;
    }
    if (first) signal_(peer, 0);
    if (w->wait() == csp::waiter::aborted) {
        {
            std::lock_guard lk(lock_);
            if (b.linked) {
                auto& q = state(peer).blocked;
                for (auto it = q.begin(); it != q.end(); ++it)
                    if (*it == &b) {
                        q.erase(it);
                        break;
                    }
            }
        }
        w->throw_aborted();
    }
    if (b.error) throw *b.error;
    if (!b.usage.empty()) throw usage_error(b.usage);
    return admission::admitted;
}

void flow_control::grant(peer_state& p) {
    while (!p.blocked.empty() && fits(p, p.blocked.front()->charge)) {
        blocked_send* b = p.blocked.front();
        p.blocked.pop_front();
        b->linked = false;
        const std::uint64_t charge = b->charge;
        if (b->w->commit(0)) {  // else aborted by the deadlock detector: it unlinked itself from us
            p.in_flight += charge;
            b->w->wake();
        }
    }
}

void flow_control::returned(int peer, std::uint64_t bytes) {
    bool still_blocked;
    {
        std::lock_guard lk(lock_);
        peer_state& p = state(peer);
        if (bytes > p.in_flight)
            throw frame_error("node " + std::to_string(peer) + " credited " + std::to_string(bytes) +
                              " bytes, more than the " + std::to_string(p.in_flight) + " in flight to it");
        p.in_flight -= bytes;
        grant(p);
        still_blocked = !p.blocked.empty();
    }
    if (still_blocked) signal_(peer, 0);
}

template <class F>
void flow_control::release_all(peer_state& p, F outcome) {
    for (blocked_send* b : p.blocked) {
        b->linked = false;
        if (b->w->commit(0)) {
            outcome(*b);
            b->w->wake();
        }
    }
    p.blocked.clear();
}

void flow_control::fail(int peer, const std::shared_ptr<const peer_error>& error) {
    std::lock_guard lk(lock_);
    peer_state& p = state(peer);
    if (!p.failed) p.failed = error;
    release_all(p, [&](blocked_send& b) { b.error = p.failed; });
}

void flow_control::close(const std::string& why) {
    std::lock_guard lk(lock_);
    closed_ = why;
    for (auto& [peer, p] : peers_) release_all(p, [&](blocked_send& b) { b.usage = why; });
}

void flow_control::learnt(int peer, const link_limits& limits) {
    std::lock_guard lk(lock_);
    state(peer).limits = limits;
}

std::uint32_t flow_control::peer_max_frame(int peer) const {
    std::lock_guard lk(lock_);
    auto it = peers_.find(peer);
    return it == peers_.end() ? 0 : it->second.limits.max_frame;
}

std::uint64_t flow_control::in_flight(int peer) const {
    std::lock_guard lk(lock_);
    auto it = peers_.find(peer);
    return it == peers_.end() ? 0 : it->second.in_flight;
}

std::uint64_t flow_control::owed_now(peer_state& p) {
    const std::uint64_t owed = p.taken - p.credited;
    p.credited = p.taken;
    p.wanted = false;
    return owed;
}

bool flow_control::taken(int peer, std::uint64_t charge) {
    std::uint64_t credit = 0;
    {
        std::lock_guard lk(lock_);
        peer_state& p = state(peer);
        p.taken += charge;
        // A quarter of the window the peer keeps (ours until its handshake told us).
        const std::uint64_t batch = (p.limits.window ? p.limits.window : window_) / 4;
        if (p.wanted || p.taken - p.credited >= batch) credit = owed_now(p);
    }
    if (credit) signal_(peer, credit);
    return credit != 0;
}

void flow_control::asked(int peer) {
    std::uint64_t credit = 0;
    {
        std::lock_guard lk(lock_);
        peer_state& p = state(peer);
        if (p.taken > p.credited) credit = owed_now(p);
        else p.wanted = true;
    }
    if (credit) signal_(peer, credit);
}

}  // namespace csp::net::detail
