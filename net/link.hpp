#pragma once
// A link: everything a node knows about its connection to one peer, owned and
// driven by the switch (switchboard.hpp) alone, so it needs no lock.
//
//   event            from                       to
//   ---------------  -------------------------  ---------------------------
//   connected        connecting                 handshaking
//   await_crossing   connecting, handshaking    handshaking, until deadline()
//   retry_later      connecting, handshaking    connecting, a new connector at retry_at()
//   up               connecting, handshaking    up
//   abandon          up, draining               connecting (retiring until its last exit)
//   drain            up, draining               draining (goodbye queued once)
//   peer_left        up, draining               draining
//   last exit        draining                   closed
//   lose             any but closed and lost    lost
//
//   connecting   our connector is looking the peer up and connecting
//   handshaking  a connection is exchanging hello and welcome (ours), or ours
//                lost a crossing (handshake.hpp) and the peer's is on its way
//                (until deadline())
//   up           a transport (transport.hpp) moves frames both ways
//   draining     goodbye is queued behind every frame sent before it; the
//                link waits for the peer's goodbye and end of stream
//   closed       both goodbyes passed and the transport has stopped
//   lost         the connection failed, or never came; error() says why
//
// A connection accepted from the peer enters up from connecting as well (the
// link is made then). closed and lost are final: a node talks to one
// incarnation of each peer.
//
// abandon: an accepted connection ended before the peer's first frame (its
// connector had timed out; link_down::abandoned). The peer never used it,
// so the link is as before the connection came: connecting, its queue
// whole. The abandoned transport's processes are still exiting (retiring());
// no other transport may start until they have, since both would hold the
// peer's slot (its UCX endpoint, its news channel).
//
// Invariants
//  1. error() is set exactly once, when the peer leaves (its goodbye) or the
//     link is lost, and never changes; every waiter is handed that one error.
//  2. Frames are queued in send order from the first send on, whatever the
//     state; the transport sends them in that order once up. No data frame
//     is queued after error() is set.
//  3. settled() -- final, the transport's processes all exited and no
//     connector is running -- is the only condition under which the switch
//     may forget the link's resources.
//  4. Once no transport process can read the queue (the last one exited,
//     or the link was lost before it was up), what is left in it is
//     dropped at once: a message may borrow its sender's memory
//     (loans.hpp), whose lender waits for every message to be dropped.
// An event in a state the table does not list is a bug in the switch: it
// throws logic_error naming the peer, the event and the state.
#include <cstddef>
#include <memory>
#include <string>

#include "csp/channel.hpp"
#include "net/errors.hpp"
#include "net/transport.hpp"

namespace csp::net::detail {

enum class link_state { connecting, handshaking, up, draining, closed, lost };
const char* describe(link_state s) noexcept;

class link {
public:
    explicit link(int peer);
    link(const link&) = delete;
    link& operator=(const link&) = delete;

    int peer() const noexcept { return peer_; }
    link_state state() const noexcept { return state_; }
    // Why sends to the peer fail (see invariant 1); null while it may not.
    const std::shared_ptr<const peer_error>& error() const noexcept { return error_; }
    std::size_t queued() const { return queue_.buffered(); }
    // Of those, notices (node::send_notice) queued while no transport has
    // read the queue yet; 0 once the link came up.
    std::size_t notices_queued() const noexcept {
        return state_ == link_state::connecting || state_ == link_state::handshaking ? notices_ : 0;
    }
    // When a handshaking link waiting for the peer's crossing connection gives up.
    clock::time_point deadline() const noexcept { return deadline_; }
    // When a link whose set-up failed for a reason that may pass starts its
    // next connector (max: none waiting); when its first one started.
    clock::time_point retry_at() const noexcept { return retry_at_; }
    clock::time_point first_attempt() const noexcept { return first_attempt_; }
    int attempts() const noexcept { return attempts_; }
    const transport* carrier() const noexcept { return transport_.get(); }
    bool connector_running() const noexcept { return connector_; }
    // An abandoned transport's processes have not all exited yet.
    bool retiring() const noexcept {
        return (state_ == link_state::connecting || state_ == link_state::handshaking) && running_ > 0;
    }
    // Connecting with no attempt of ours under way: no connector, none
    // scheduled. A link the peer's connection made, and the peer then
    // abandoned, rests here until a send or the peer's next connection.
    bool idle() const noexcept {
        return state_ == link_state::connecting && !connector_ && retry_at_ == clock::time_point::max();
    }
    // Idle with nothing queued: only the peer's abandoned connection ever
    // made this link; nothing to deliver and no goodbye owed, as with no link.
    bool unused() const { return idle() && queued() == 0; }
    bool goodbye_sent() const noexcept { return goodbye_sent_; }
    bool settled() const noexcept {
        return (state_ == link_state::closed || state_ == link_state::lost) && running_ == 0 && !connector_;
    }

    // --- transitions (the switch's) -------------------------------------
    // A connector for this link was started / has reported.
    void connector_started();
    void connector_finished() noexcept { connector_ = false; }
    // The connector failed in a way that may pass (a stall): try again at `at`.
    void retry_later(clock::time_point at);
    // Our connector reached the peer and is exchanging hello and welcome.
    void connected();
    // Our connection lost a crossing; the peer's arrives by `until`.
    void await_crossing(clock::time_point until);
    // A connection passed its handshake: `t` carries the link from now on,
    // sending `first` before anything queued.
    void up(std::unique_ptr<transport> t, std::shared_ptr<node_core> core, csp::process_group& group,
            std::optional<outgoing> first);
    // The accepted connection that carried the link ended before the
    // peer's first frame: back to connecting, the queue kept (see above;
    // a goodbye queued by a closing node stays queued, and goes out on the
    // next connection).
    void abandon();
    // Queues a data frame (invariant 2): connecting, handshaking or up, and
    // no error yet.
    void post(outgoing f);
    // Queues a flow control frame (flow_control.hpp) if the link may still
    // carry one: not after an error or once draining. No state change.
    void signal(outgoing f);
    // Queues goodbye, carrying `farewell` (frame.hpp: at most max_farewell
    // and the peer's max_frame), behind everything sent; up -> draining.
    // Once only.
    void drain(std::uint32_t own_rank, payload farewell = {});
    // The peer's goodbye arrived: `why` is the error sends to it get from now
    // on. The link drains (our goodbye answers theirs) if it was up.
    void peer_left(std::uint32_t own_rank, std::string why, payload farewell = {});
    // The link failed. Returns false, changing nothing, if it is lost or the
    // peer had left already (a late failure of a link that ended cleanly);
    // otherwise stores the error, stops the transport, and returns true.
    bool lose(const std::string& why);
    // Forces the transport's processes to stop (the closing node's linger ran out).
    void interrupt() noexcept;
    // One of the transport's processes exited.
    void process_exited();

private:
    [[noreturn]] void illegal(const char* event) const;
    // Drops every frame still queued (invariant 4).
    void discard_queued();

    int peer_;
    link_state state_ = link_state::connecting;
    csp::channel<outgoing> queue_{csp::buffer::unbounded(), csp::sharing::any_to_one};
    csp::writer<outgoing> out_ = queue_.writer();
    std::unique_ptr<transport> transport_;
    std::shared_ptr<const peer_error> error_;
    clock::time_point deadline_ = clock::time_point::max();
    clock::time_point retry_at_ = clock::time_point::max();
    clock::time_point first_attempt_{};
    int attempts_ = 0;
    std::size_t notices_ = 0;  // notices posted; all still queued until a transport reads the queue
    int running_ = 0;          // of the transport's processes
    bool connector_ = false;   // a connector is running
    bool goodbye_sent_ = false;
};

}  // namespace csp::net::detail
