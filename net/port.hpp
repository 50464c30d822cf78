#pragma once
// A port: a mailbox of one node that any node of the job may send to. In CSP
// terms an unbounded shared channel whose writers are the network.
//
//   csp::net::port jobs = node.open(1);
//   auto v = jobs.receive<std::vector<double>>();        // blocks this process only
//   csp::net::message m = jobs.receive();                // source, tag, raw bytes
//
//   double x; int cmd;                                   // a port among other guards
//   switch (csp::select(csp::net::input(jobs, x), csp::input(commands, cmd),
//                       csp::timeout(100ms))) { ... }
//
// Receiving from a set of ports is a select over their guards. Messages from
// one node to one port arrive in the order sent. A receive throws peer_error
// when it takes the entry that reports a peer's failure or departure
// (errors.hpp), and decode_error when the bytes are not a T; either way the
// port goes on. A peer's entry comes after every message it sent. Once no
// node of the job is left that could send to this one (every other rank
// left, died or is gone), a receive that finds the port empty throws the
// last one's peer_error, as a channel whose writers all retired does, and so
// does a guard: in a priority select it is ready in its place, ahead of later
// guards with data, which keep it for the next select.
//
// A message taken from a port (by receive or a guard) is credited back to
// its sender, whose window (node_options::window) bounds what waits here
// unread. receive() lets a credit it queued leave at once; a guard cannot
// yield inside select, so there the credit leaves when the process next
// blocks or yields.
//
// On a node whose links use UCX and whose runtime has one worker thread,
// receive() on an empty port first polls the worker itself, as an MPI rank
// polls inside MPI_Recv, for up to about 50 us, letting the node's other
// processes run at every look: a message for this port is then
// taken straight from the worker, without the progress process's hand-over
// (node_stats::taken_polling counts them). Nothing else changes: the same
// order, errors and credit. A guard never polls.
//
// Which departures a port hears (a peer that closed its node cleanly):
//   departures::last_sender  (the default) one that leaves no peer that could
//                            still send: a receive would wait for ever
//   departures::each         every one, as a peer_error naming the peer and
//                            saying it left (a layer that matches messages
//                            by source, like the collectives, fails the
//                            receives from that peer)
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "csp/alt.hpp"
#include "csp/timer.hpp"
#include "csp/observer.hpp"
#include "net/message.hpp"

namespace csp::net {

class node;
namespace detail {
struct node_core;
// A process took `m` from a port: the sender's window may move
// (flow_control.hpp). True if a credit for the sender was queued. `report`:
// tell the observer the calling process received it (report_taken).
bool message_taken(node_core& core, const message& m, bool report) noexcept;
// Whether a receiving process polls the node's UCX worker while it waits
// (node_core::receivers_poll), and the poll (ucx_transport.hpp).
bool receivers_poll(const node_core& core) noexcept;
// The error of the last peer to depart once no node is left that could send
// to this node (node_core::no_sender_left), or null while one is; and what
// a port (`port_name`, "port 5 of node 0") then says, node.cpp.
std::shared_ptr<const peer_error> no_sender_left(const node_core& core) noexcept;
peer_error no_sender_error(const peer_error& last, const std::string& port_name);
std::optional<message> poll_port(node_core& core, port_id port, const csp::channel<message>& ch);
}  // namespace detail

// A message from another node as received by the calling process, for the
// installed observer (a timeline draws it as the end of the sender's
// arrow). A port reports every message taken from it, except a port a
// library layer claimed (node::claim): such a layer passes its messages on
// through a mailbox, and reports each where a process takes it from there.
inline void report_taken(const message& m, int receiver) {
    if (!m.failure && m.source != receiver && m.source >= 0)
        csp::notify_message(csp::event::kind::message_received,
                            {m.source, receiver, m.port, m.tag, m.body.size(), m.sequence});
}

enum class departures : std::uint8_t { last_sender, each };

class port {
public:
    port() = default;

    port_id id() const noexcept { return id_; }

    message receive() const {
        message m = next();
        // A credit was queued for the switch: let it go out now, not once
        // this process next blocks (a reader that never empties the port
        // would otherwise hold it back, and the sender with it).
        if (core_ && detail::message_taken(*core_, m, report_)) csp::yield();
        return checked(std::move(m));
    }
    template <class T>
    T receive() const { return receive().template as<T>(); }
    // Receives a std::vector<E> (or span) into `out`, without allocating;
    // returns how many elements came (message::into).
    template <class E>
    std::size_t receive_into(std::span<E> out) const { return receive().into(out); }

    // Messages waiting to be received.
    std::size_t pending() const { return channel_.buffered(); }

    std::string label() const { return port_text(id_); }

    // An entry that reports a failure becomes the exception it carries.
    static message checked(message m) {
        if (m.failure) throw *m.failure;
        return m;
    }
    // Every message leaving the port passes here, so its sender is credited.
    message taken(message m) const {
        if (core_) detail::message_taken(*core_, m, report_);
        return m;
    }

private:
    friend class node;
    template <class T> friend class port_guard;
    port(port_id id, csp::channel<message> c, std::shared_ptr<detail::node_core> core)
        : id_(id),
          channel_(std::move(c)),
          in_(channel_.reader()),
          core_(std::move(core)),
          polls_(core_ && detail::receivers_poll(*core_)) {}

    message next() const {
        if (polls_ && channel_.buffered() == 0)
            if (std::optional<message> m = detail::poll_port(*core_, id_, channel_)) return std::move(*m);
        // Without a sender left, an empty port stays empty but for this
        // node's own sends: waiting would be for ever. A departure that
        // comes while this process waits puts its entry in the port. (The
        // flag first: buffered() takes the channel's lock.)
        if (const auto last = without_sender(); last && channel_.buffered() == 0) fail_without_sender(*last);
        try {
            return in_.read();
        } catch (const csp::retired_error&) {
            closed();
        }
    }
    // The last departure's error once every other node of the job has
    // departed (port.hpp, top), else null; a port found empty then throws
    // fail_without_sender.
    std::shared_ptr<const peer_error> without_sender() const noexcept {
        return core_ ? detail::no_sender_left(*core_) : nullptr;
    }
    [[noreturn]] void fail_without_sender(const peer_error& last) const {
        throw detail::no_sender_error(last, channel_.name());
    }
    // The node closed and its port lost its only writer (node::close): every
    // message that came was there to take first.
    [[noreturn]] void closed() const {
        throw csp::retired_error(channel_.name() + ": the node is closed, and every message that came was received");
    }

    port_id id_ = 0;
    csp::channel<message> channel_;
    csp::reader<message> in_;
    std::shared_ptr<detail::node_core> core_;
    bool report_ = true;  // false for a claimed port: see report_taken
    bool polls_ = false;  // receive() polls the node's UCX worker while it waits
};

// A port as an alternation guard: on commit, the message (T = message) or its
// value decoded as T lands in `out`.
template <class T>
class port_guard final : public csp::guard_base<port_guard<T>> {
public:
    port_guard(const port& p, T& out) : out_(&out), port_(&p), input_(p.in_, m_) {}
    port_guard(const port_guard&) = delete;
    port_guard& operator=(const port_guard&) = delete;

    // An empty port without a sender left fails the select here, in the
    // guard's place; enable reports it ready, so the alternation withdraws
    // and comes back to try_complete.
    bool try_complete() override {
        try {
            if (!input_.try_complete()) {
                if (const auto last = port_->without_sender()) port_->fail_without_sender(*last);
                return false;
            }
        } catch (const csp::retired_error&) {
            port_->closed();
        }
        deliver();
        return true;
    }
    bool enable(csp::wait_node& n) override {
        try {
            return input_.enable(n) || port_->without_sender() != nullptr;
        } catch (const csp::retired_error&) {
            port_->closed();
        }
    }
    void disable(csp::wait_node& n) override { input_.disable(n); }
    void complete(csp::wait_node& n) override {
        try {
            input_.complete(n);
        } catch (const csp::retired_error&) {
            port_->closed();
        }
        deliver();
    }
    void describe(std::string& out) const override { input_.describe(out); }

private:
    void deliver() {
        if constexpr (std::is_same_v<T, message>) *out_ = port::checked(port_->taken(std::move(m_)));
        else *out_ = port::checked(port_->taken(std::move(m_))).template as<T>();
    }

    T* out_;
    const port* port_;
    message m_;
    csp::input_guard<message> input_;
};

template <class T>
port_guard<T> input(const port& p, T& out) { return {p, out}; }

}  // namespace csp::net
