#include "net/link.hpp"

#include <stdexcept>

#include "csp/alt.hpp"

namespace csp::net::detail {

const char* describe(link_state s) noexcept {
    switch (s) {
        case link_state::connecting: return "connecting";
        case link_state::handshaking: return "handshaking";
        case link_state::up: return "up";
        case link_state::draining: return "draining";
        case link_state::closed: return "closed";
        case link_state::lost: return "lost";
    }
    return "?";
}

link::link(int peer) : peer_(peer) {}

void link::illegal(const char* event) const {
    throw std::logic_error(std::string("link to node ") + std::to_string(peer_) + ": " + event + " while " +
                           describe(state_));
}

void link::connector_started() {
    if (state_ != link_state::connecting || connector_) illegal("a second connector");
    connector_ = true;
    if (attempts_++ == 0) first_attempt_ = clock::now();
    retry_at_ = clock::time_point::max();
}

void link::retry_later(clock::time_point at) {
    if ((state_ != link_state::connecting && state_ != link_state::handshaking) || connector_) illegal("retry_later");
    state_ = link_state::connecting;
    deadline_ = clock::time_point::max();
    retry_at_ = at;
}

void link::connected() {
    if (state_ != link_state::connecting) illegal("connected");
    state_ = link_state::handshaking;
}

void link::await_crossing(clock::time_point until) {
    if (state_ != link_state::connecting && state_ != link_state::handshaking) illegal("a lost crossing");
    state_ = link_state::handshaking;
    deadline_ = until;
}

void link::up(std::unique_ptr<transport> t, std::shared_ptr<node_core> core, csp::process_group& group,
              std::optional<outgoing> first) {
    if ((state_ != link_state::connecting && state_ != link_state::handshaking) || running_ > 0) illegal("up");
    state_ = link_state::up;
    deadline_ = clock::time_point::max();
    retry_at_ = clock::time_point::max();
    transport_ = std::move(t);
    running_ = transport_->start(link_start{std::move(core), peer_, group, queue_.reader(), std::move(first)});
}

void link::abandon() {
    if ((state_ != link_state::up && state_ != link_state::draining) || error_) illegal("an abandoned connection");
    state_ = link_state::connecting;
}

void link::post(outgoing f) {
    if (error_ || (state_ != link_state::connecting && state_ != link_state::handshaking && state_ != link_state::up))
        illegal("a send");
    if (f.notice) ++notices_;
    out_.write(std::move(f));
}

void link::signal(outgoing f) {
    if (error_ || (state_ != link_state::connecting && state_ != link_state::handshaking && state_ != link_state::up))
        return;
    out_.write(std::move(f));
}

void link::drain(std::uint32_t own_rank, payload farewell) {
    if (state_ != link_state::up && state_ != link_state::draining) illegal("drain");
    state_ = link_state::draining;
    if (goodbye_sent_) return;
    outgoing bye;
    bye.head = header::goodbye(own_rank, static_cast<std::uint32_t>(farewell.size()));
    bye.body = std::move(farewell);
    bye.ctl = outgoing::control::goodbye;
    out_.write(std::move(bye));
    goodbye_sent_ = true;
}

void link::peer_left(std::uint32_t own_rank, std::string why, payload farewell) {
    if (state_ != link_state::up && state_ != link_state::draining) illegal("the peer's goodbye");
    if (!error_) error_ = std::make_shared<const peer_error>(peer_, std::move(why));
    drain(own_rank, std::move(farewell));
}

bool link::lose(const std::string& why) {
    if (state_ == link_state::lost || state_ == link_state::closed || error_) return false;
    error_ = std::make_shared<const peer_error>(peer_, why);
    const bool carried = state_ == link_state::up || state_ == link_state::draining;
    state_ = link_state::lost;
    deadline_ = clock::time_point::max();
    if (carried) {
        outgoing abort;
        abort.ctl = outgoing::control::abort;
        out_.write(std::move(abort));
        transport_->interrupt();
    } else {
        discard_queued();  // no transport ever read the queue, and none will
    }
    return true;
}

void link::discard_queued() {
    auto in = queue_.reader();
    outgoing f;
    while (queue_.buffered() > 0 && csp::select(csp::input(in, f), csp::skip()) == 0) f = outgoing{};
}

void link::interrupt() noexcept {
    if (transport_ && running_ > 0) transport_->interrupt();
}

void link::process_exited() {
    if (running_ <= 0) illegal("an exit of a process it does not have");
    if (--running_ > 0) return;
    if (state_ == link_state::draining) {
        // Every process reports the link's end before it exits, so a link
        // whose processes are all gone without having been lost ended with
        // the peer's goodbye.
        if (!error_) illegal("the end of its transport without the peer's goodbye");
        state_ = link_state::closed;
    } else if (state_ == link_state::connecting || state_ == link_state::handshaking) {
        // The abandoned transport is gone; the queue waits for the next one.
        transport_.reset();
        return;
    } else if (state_ != link_state::lost) {
        illegal("the end of its transport");
    }
    transport_.reset();  // closes the connection (transport.hpp: nothing is used after the last exit)
    discard_queued();
}

}  // namespace csp::net::detail
