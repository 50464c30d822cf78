#pragma once
// Ranks as nodes: a communicator over the messaging layer.
//
//   csp::net::node self;                                   // from the environment
//   csp::collectives::net_communicator comm(self);
//   double total = csp::collectives::allreduce(comm, x, csp::collectives::sum{});
//
// All collective messages of a node go to one port (default_port), carrying
// the collective tag in the message tag. The port hands each, as it arrives,
// to a mailbox that matches (source, tag) (the mailbox is the port's sink,
// net/port_sink.hpp: no process passes messages on), so any number of
// processes of the node may receive at once. Values travel through the codec
// (net/codec.hpp). A peer's failure or departure, reported by the port
// (opened to hear every departure), fails the receives from that peer and
// from any peer: they throw its peer_error, so a collective fails on every
// rank once a member is lost or gone.
//
// The communicator must be made, used and destroyed inside processes of the
// node's runtime, and destroyed before its node (its end releases the
// port). One communicator per node and port: it claims its port
// (node::claim), so opening that port, or making a second communicator on
// it, is a usage_error while it lives.
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "collectives/communicator.hpp"
#include "collectives/context_pool.hpp"
#include "collectives/detail/byte_messages.hpp"
#include "collectives/host_boards.hpp"
#include "collectives/detail/peer_context.hpp"
#include "collectives/mailbox.hpp"
#include "collectives/selection.hpp"
#include "collectives/tag.hpp"
#include "net/node.hpp"
#include "net/port_sink.hpp"

namespace csp::collectives {

namespace detail {
// A message from a node to itself, as the network would deliver it: encoded,
// so that its receive checks the type as for any other. A lent value
// (net/loans.hpp) is copied: its lender may settle before this node's
// receiver takes it, and would wait for that receive.
template <class T>
net::message local_message(int node, net::port_id port, std::uint64_t tag, T value) {
    net::message m;
    m.source = node;
    m.port = port;
    m.tag = tag;
    m.type = net::wire_type<T>();
    if constexpr (net::is_lent_v<T>) m.body = net::encode(csp::owned(std::move(value)));
    else m.body = net::encode(std::move(value));
    return m;
}
// A received message passed on from a node to itself: the same bytes and
// type, with the relaying node as its source.
inline net::message relayed_message(int node, net::port_id port, std::uint64_t tag, const net::message& received) {
    net::message m = received;
    m.source = node;
    m.port = port;
    m.tag = tag;
    return m;
}
}  // namespace detail

class net_communicator : public detail::byte_messages<net_communicator> {
public:
    static constexpr net::port_id default_port = 0x434f4c4c;  // "COLL"

    explicit net_communicator(net::node& n, net::port_id port = default_port);
    net_communicator(const net_communicator&) = delete;
    net_communicator& operator=(const net_communicator&) = delete;
    // Logs the messages no call took, if any (never drops them in silence).
    ~net_communicator();

    int rank() const { return node_->rank(); }
    int size() const { return node_->size(); }
    // Processes of one host over shared memory, or a network (selection.hpp).
    csp::collectives::link_level link_level() const {
        return node_->shares_host_memory() ? link_level::host : link_level::network;
    }
    // Whether a receive is served by the IO scheduler's poll (net::node).
    bool receives_through_io() const { return node_->receives_through_io(); }
    // What a group of ranks that share a host (group::on_one_host) needs to
    // meet in shared memory: links between nodes of one host that go
    // through it (UCX), whether the host has more ranks than hardware
    // threads, and where a board that cannot be made is reported.
    bool host_links_share_memory() const { return node_->host_links_share_memory(); }
    bool host_oversubscribed() const { return node_->host_oversubscribed(); }
    // The whole job is on this host and outnumbers its CPUs (selection.hpp).
    bool job_oversubscribed() const { return node_->job_oversubscribed(); }
    void log_line(const std::string& line) const;

    // A value kept by the caller (an lvalue) is encoded from where it is,
    // with no copy made first; a moved one is adopted where the codec can
    // (a vector's elements: net/codec.hpp).
    template <class T>
    void send(int to, tag t, T&& value) {
        send_as<false>(to, t, std::forward<T>(value));
    }
    // send() of a notice whose loss is no fault (net::node::send_notice): a
    // revocation (revocation.hpp), which a rank that has gone needs not hear.
    template <class T>
    void send_notice(int to, tag t, T&& value) {
        send_as<true>(to, t, std::forward<T>(value));
    }
    // receive, receive_any, receive_into, receive_view, relay, send_each,
    // pass_on: detail/byte_messages.hpp.

    // `into` for the one message from `from` with tag t, a vector of E or a
    // span of them (net/landing.hpp): the transport writes it straight
    // into `into`, and receive_into(from, t, into) then copies
    // nothing. t must be a tag of one message: one next_tag() drew for this
    // call (the neighbour exchange's and sendrecv's are).
    template <class E>
    net::landing land(int from, tag t, std::span<E> into) {
        detail::check_rank(from, size(), "land from");
        if (from == rank()) return {};
        return node_->land(from, port_id_, t.bits(), into);
    }
    // The message from `from` with tag t will be landed, into a buffer of
    // `bytes` if known, before its buffer can be named (net::node::expect).
    net::landing expect(int from, tag t, std::size_t bytes = std::numeric_limits<std::size_t>::max()) {
        detail::check_rank(from, size(), "expect from");
        if (from == rank()) return {};
        return node_->expect(from, port_id_, t.bits(), bytes);
    }
    tag next_tag(stream s = {}) { return counter_.next(s); }
    tag upcoming_tag(stream s = {}) { return counter_.upcoming(s); }
    // This rank is done with the call of tag t: its messages here and to
    // come are dropped (mailbox::forget).
    void forget(tag t) { box_.forget(t); }
    // This node's group contexts (context_pool.hpp, group.hpp).
    context_pool& contexts() { return contexts_; }

    // Messages that arrived and no receive has taken yet.
    std::size_t unclaimed() const { return box_.unclaimed(); }

    // The host board of stream s (host_board.hpp), for the host_memory
    // algorithms; null when the ranks do not share this host's memory, or
    // when its segment could not be made or mapped (every rank then falls
    // back to messages alike; the reason is logged). The first call on a
    // stream makes it, a collective step of every rank with that call's
    // tag t (host_boards.hpp).
    host_board* board_on_host(stream s, tag t);
    // The large board of stream s (host_board::large_shape), for values too
    // large for the board above; made by the first call on a stream that
    // needs it, with that call's tag t, like the board above. Only ranks
    // that have met on the stream's board_on_host ask for one (that
    // board's set-up made the links a wake needs).
    host_board* large_board_on_host(stream s, tag t);

private:
    // The claimed port's sink: messages into the mailbox, a peer's failure
    // or departure into its failure. Messages come unreported: one is the
    // calling process's once it leaves the mailbox (net::report_taken).
    // (net_communicator.cpp, like the constructor and the destructor: a
    // program's files need not compile the mailbox's delivery.)
    class inbox final : public net::port_sink {
    public:
        explicit inbox(net_communicator& comm) : comm_(comm) {}
        void deliver(net::message m) noexcept override;
        net::leftover_filter expected_after_release() const override;
        void node_closed(const std::string& node) noexcept override;

    private:
        net_communicator& comm_;  // its mailbox, rank and size
    };

    template <bool Notice, class T>
    void send_as(int to, tag t, T&& value) {
        detail::check_rank(to, size(), "send to");
        if constexpr (!Notice) box_.refuse_revoked_send(t.bits());
        if (to == rank()) {
            box_.deliver(to, t.bits(), detail::local_message(to, port_id_, t.bits(), std::forward<T>(value)));
            return;
        }
        try {
            if constexpr (Notice) node_->send_notice(to, port_id_, std::forward<T>(value), t.bits());
            else node_->send(to, port_id_, std::forward<T>(value), t.bits());
        } catch (const net::peer_error& e) {
            detail::rethrow_sending(e, to, t);
        }
    }

    friend class detail::byte_messages<net_communicator>;
    // `among`: see mailbox::take.
    mailbox<net::message>::envelope take(int from, std::uint64_t bits, std::span<const int> among = {});
    mailbox<net::message>::envelope take(int from, tag t, std::span<const int> among = {}) {
        return take(from, t.bits(), among);
    }
    // m's bytes and type to rank `to` (itself included) with tag t.
    void pass(int to, tag t, const net::message& m) {
        box_.refuse_revoked_send(t.bits());
        if (to == rank()) box_.deliver(to, t.bits(), detail::relayed_message(to, port_id_, t.bits(), m));
        else try {
            node_->forward(to, port_id_, m, t.bits());
        } catch (const net::peer_error& e) {
            detail::rethrow_sending(e, to, t);
        }
    }

    net::node* node_;
    net::port_id port_id_;
    mailbox<net::message> box_;  // whole messages: a receive checks the sent type
    inbox inbox_{*this};
    tag_counter counter_;
    context_pool contexts_;
    host_boards boards_;
    // Last: released first, before the mailbox and anything else goes (no
    // delivery runs once the claim has ended).
    net::sink_claim claim_;
};

// Compiled once in the library (net_communicator.cpp).
extern template class mailbox<net::message>;

}  // namespace csp::collectives

// The common collectives of a net_communicator, compiled in the library.
#include "collectives/net_instances.hpp"
