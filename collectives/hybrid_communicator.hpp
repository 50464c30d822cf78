#pragma once
// Ranks as fibers of several nodes: a hybrid job (processes x fibers).
//
//   csp::net::node self;                              // one OS process of the job
//   cc::hybrid_job job(self, /*ranks here=*/4);       // collective over the nodes
//   job.run([](cc::hybrid_communicator& c) {          // 4 processes, ranks of the job
//       double s = cc::allreduce(c, x, cc::sum{});    // every collective, unchanged
//                                                     // (allreduce, barrier: two levels)
//       cc::hierarchy h(c);                           // ranks of my host, then leaders
//   });
//
// Ranks are numbered node by node: node k's ranks follow node k-1's, so a
// rank is (node, local index) and the ranks of one node are consecutive.
// Nodes may hold different numbers of ranks (at most 255 each).
//
// Messages. Each local rank has a port of its own (port_base + local index)
// whose sink is its mailbox (net/port_sink.hpp), matched by (source rank,
// tag) as in net_communicator. A message to a rank of another node goes over
// the node's link to that port; the sender's local index travels in the
// tag's top sequence bits (so the sequence numbers of one stream wrap after
// 2^20 calls, far beyond any message still waiting for its receive). A
// message to a rank of this node goes straight into that rank's mailbox,
// encoded as over the network (a receive checks the type either way). A
// node's failure or departure fails the receives from each of its ranks,
// and from any rank. A message from another node can land in a buffer the
// receiving rank names for it (land, expect: net/landing.hpp), as with a
// net_communicator; one from this node is copied from its mailbox.
//
// The job must be made and run inside processes of the node's runtime and
// destroyed before its node; a node holds one hybrid job at a time.
#include <cstdint>
#include <deque>
#include <exception>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/context_pool.hpp"
#include "collectives/dispatch.hpp"
#include "collectives/detail/peer_context.hpp"
#include "collectives/hierarchy.hpp"
#include "collectives/mailbox.hpp"
#include "collectives/net_communicator.hpp"
#include "collectives/tag.hpp"
#include "csp/process.hpp"
#include "net/log.hpp"
#include "net/node.hpp"
#include "net/port_sink.hpp"

namespace csp::collectives {

class hybrid_communicator;

class hybrid_job {
public:
    static constexpr net::port_id port_base = 0x48594200;  // "HYB" + local index
    static constexpr int max_local = 255;                  // port_base + 255 sets the job up

    // Collective over the job's nodes: each says how many ranks it holds.
    hybrid_job(net::node& n, int ranks_here) : node_(&n), local_(ranks_here) {
        if (ranks_here < 1 || ranks_here > max_local)
            throw usage_error("hybrid_job: a node holds 1 to " + std::to_string(max_local) + " ranks, not " +
                              std::to_string(ranks_here));
        {
            net_communicator setup(n, port_base + max_local);
            counts_ = allgather(setup, ranks_here);
            barrier(setup);  // nobody's setup port closes while others still send to it
        }
        first_.resize(counts_.size() + 1);
        for (std::size_t k = 0; k < counts_.size(); ++k) first_[k + 1] = first_[k] + counts_[k];
        // A claim that fails (a port owned already) ends the ranks made so
        // far, and their claims with them.
        for (int i = 0; i < local_; ++i) ranks_.emplace_back(*this, n, port_base + static_cast<net::port_id>(i));
    }
    // As a net_communicator does, names each message no call of a rank here
    // took (mailbox::unclaimed_report).
    ~hybrid_job() {
        try {
            for (std::size_t i = 0; i < ranks_.size(); ++i)
                if (const auto line = ranks_[i].box.unclaimed_report(); !line.empty())
                    net::log_line("csp.net " + node_->job() + "/" + std::to_string(node_->rank()) + ": rank " +
                                  std::to_string(first_rank(node_->rank()) + static_cast<int>(i)) +
                                  " of a hybrid job: " + line);
        } catch (const std::exception&) {
            // Out of memory while closing: nothing more to say.
        }
    }
    hybrid_job(const hybrid_job&) = delete;
    hybrid_job& operator=(const hybrid_job&) = delete;

    int size() const noexcept { return first_.back(); }
    int nodes() const noexcept { return static_cast<int>(counts_.size()); }
    int ranks_here() const noexcept { return local_; }
    // The first rank of `node`, and the node of `rank`.
    int first_rank(int node) const { return first_[static_cast<std::size_t>(node)]; }
    int node_of(int rank) const {
        int k = 0;
        while (first_[static_cast<std::size_t>(k) + 1] <= rank) ++k;
        return k;
    }

    // Runs body(comm) as each of this node's ranks, one process each, and
    // returns their results in local order. A rank that throws fails this
    // node's other ranks' receives with its error. With several nodes and
    // more ranks than nodes, each communicator has two levels (two_levels()),
    // made without a message from the layout every rank knows.
    template <class F>
    auto run(F&& body);

private:
    friend class hybrid_communicator;
    static constexpr int fiber_shift = tag::algorithm_shift - 8;  // the local index: the sequence's top 8 bits

    // A local rank's port sink: what arrives into its mailbox, by source
    // rank; a node's failure or departure fails the receives from each of
    // its ranks (from every rank for an entry naming no node of the job).
    class inbox final : public net::port_sink {
    public:
        inbox(hybrid_job& job, mailbox<net::message>& box) : job_(job), box_(box) {}
        void deliver(net::message m) noexcept override {
            if (m.failure) {
                const auto error = std::make_exception_ptr(*m.failure);
                const int peer = m.failure->peer();
                if (peer < 0 || peer >= job_.nodes()) {
                    box_.fail(any_source, error);
                    return;
                }
                fail_ranks_of(peer, error);
                return;
            }
            const int source = job_.first_rank(m.source) + from_local(m.tag);
            const std::uint64_t k = key(m.tag);
            box_.deliver(source, k, std::move(m));
        }
        // As net_communicator's: what came is taken, then receives from the
        // ranks of other nodes fail (this node's ranks need no node).
        void node_closed(const std::string& node) noexcept override {
            try {
                const auto error = std::make_exception_ptr(
                    csp::retired_error("hybrid_job: its node (" + node + ") is closed, and no message can come"));
                for (int p = 0; p < job_.nodes(); ++p)
                    if (p != job_.node_->rank()) fail_ranks_of(p, error);
            } catch (...) {
                // Out of memory for the text: the receives wait as before.
            }
        }
        // As net_communicator's: a failed call's late messages are expected.
        net::leftover_filter expected_after_release() const override {
            return [expected = box_.expected_leftovers()](const net::message& m) mutable {
                return expected(key(m.tag));
            };
        }

    private:
        void fail_ranks_of(int node, const std::exception_ptr& error) {
            for (int s = job_.first_rank(node); s < job_.first_rank(node + 1); ++s) box_.fail(s, error);
        }

        hybrid_job& job_;
        mailbox<net::message>& box_;
    };

    struct rank_state {
        rank_state(hybrid_job& job, net::node& n, net::port_id port)
            : inbox(job, box), claim(n.claim(port, "hybrid_job", net::departures::each, inbox)) {}
        mailbox<net::message> box;
        hybrid_job::inbox inbox;  // refers to the box beside it
        tag_counter counter;
        context_pool contexts;
        net::sink_claim claim;    // last: released before the rest goes
    };

    // A tag as sent: its key with the sender's local index in the bits the
    // key leaves clear.
    static std::uint64_t wire_tag(tag t, int from_local) {
        return key(t.bits()) | (std::uint64_t(from_local) << fiber_shift);
    }
    // The mailbox key of a tag: the tag without the bits a wire tag uses
    // for the sender's local index (the same at sender and receiver).
    static std::uint64_t key(std::uint64_t bits) { return bits & ~(std::uint64_t{0xff} << fiber_shift); }
    static int from_local(std::uint64_t wire) { return static_cast<int>((wire >> fiber_shift) & 0xff); }

    void fail_here(std::exception_ptr e) {
        for (auto& r : ranks_) r.box.fail(any_source, e);
    }

    net::node* node_;
    int local_;
    std::vector<int> counts_;
    std::vector<int> first_{0};
    std::deque<rank_state> ranks_;
};

class hybrid_communicator : public detail::byte_messages<hybrid_communicator> {
public:
    hybrid_communicator(hybrid_job& job, int local) : job_(&job), local_(local) {}

    int rank() const noexcept { return job_->first_rank(job_->node_->rank()) + local_; }
    int size() const noexcept { return job_->size(); }
    int node() const noexcept { return job_->node_->rank(); }
    int local_index() const noexcept { return local_; }
    // Whether a receive from another node is served by the IO scheduler's
    // poll (net::node::receives_through_io); a one-node job receives none.
    bool receives_through_io() const { return job_->nodes() > 1 && job_->node_->receives_through_io(); }
    // The ranks of each node, then one leader per node (two_levels.hpp:
    // the table's two-level algorithms run on them), where a job of
    // several nodes has more ranks than nodes; nullptr elsewhere.
    hierarchy<hybrid_communicator>* two_levels() const noexcept { return levels_; }

    template <class T>
    void send(int to, tag t, T&& value) {
        send_as<false>(to, t, std::forward<T>(value));
    }
    // As net_communicator's: a revocation, whose loss is no fault.
    template <class T>
    void send_notice(int to, tag t, T&& value) {
        send_as<true>(to, t, std::forward<T>(value));
    }
    // receive, receive_any, receive_into, receive_view, relay, send_each,
    // pass_on: detail/byte_messages.hpp, as net_communicator's; a message
    // passed on goes to a fiber of this node or to another node.
    tag next_tag(stream s = {}) { return mine().counter.next(s); }
    tag upcoming_tag(stream s = {}) { return mine().counter.upcoming(s); }
    // As net_communicator's (the mailbox holds tags as keys).
    void forget(tag t) { mine().box.forget(tag::from_bits(hybrid_job::key(t.bits()))); }
    context_pool& contexts() { return mine().contexts; }

    // As net_communicator's land and expect (net/landing.hpp), for a
    // message from a rank of another node; one from a fiber of this node
    // comes through its mailbox, and gets no landing.
    template <class E>
    net::landing land(int from, tag t, std::span<E> into) {
        const auto p = of_another_node(from, "land from");
        return p ? job_->node_->land(p->node, my_port(), hybrid_job::wire_tag(t, p->local), into) : net::landing{};
    }
    net::landing expect(int from, tag t, std::size_t bytes = std::numeric_limits<std::size_t>::max()) {
        const auto p = of_another_node(from, "expect from");
        return p ? job_->node_->expect(p->node, my_port(), hybrid_job::wire_tag(t, p->local), bytes) : net::landing{};
    }

private:
    template <bool Notice, class T>
    void send_as(int to, tag t, T&& value) {
        detail::check_rank(to, size(), "send to");
        if constexpr (!Notice) mine().box.refuse_revoked_send(hybrid_job::key(t.bits()));
        const place p = where(to);
        if (p.node == node()) {
            deliver_here(p, t, detail::local_message(p.node, p.port, t.bits(), std::forward<T>(value)));
            return;
        }
        try {
            const std::uint64_t wire = hybrid_job::wire_tag(t, local_);
            if constexpr (Notice) job_->node_->send_notice(p.node, p.port, std::forward<T>(value), wire);
            else job_->node_->send(p.node, p.port, std::forward<T>(value), wire);
        } catch (const net::peer_error& e) {
            detail::rethrow_sending(e, to, t);
        }
    }

    friend class detail::byte_messages<hybrid_communicator>;
    hybrid_job::rank_state& mine() const { return job_->ranks_[static_cast<std::size_t>(local_)]; }
    // As net_communicator's: reported once out of the mailbox.
    mailbox<net::message>::envelope take(int from, tag t, std::span<const int> among = {}) {
        auto e = mine().box.take(from, hybrid_job::key(t.bits()), among);
        net::report_taken(e.body, job_->node_->rank());
        return e;
    }

    // Where rank `to` runs: its node, its fiber there, and that fiber's port.
    struct place {
        int node;
        int local;
        net::port_id port;
    };
    place where(int to) const {
        const int n = job_->node_of(to);
        const int local = to - job_->first_rank(n);
        return {n, local, hybrid_job::port_base + static_cast<net::port_id>(local)};
    }
    // Where rank `from` is, if on another node (a valid rank, or usage_error naming `what`).
    std::optional<place> of_another_node(int from, const char* what) const {
        detail::check_rank(from, size(), what);
        const place p = where(from);
        if (p.node == node()) return std::nullopt;
        return p;
    }
    // The port another node's ranks send this rank's messages to.
    net::port_id my_port() const { return hybrid_job::port_base + static_cast<net::port_id>(local_); }
    // m's bytes and type to rank `to`, on this node or another.
    void pass(int to, tag t, const net::message& m) {
        mine().box.refuse_revoked_send(hybrid_job::key(t.bits()));
        const place p = where(to);
        if (p.node == node()) deliver_here(p, t, detail::relayed_message(p.node, p.port, t.bits(), m));
        else try {
            job_->node_->forward(p.node, p.port, m, hybrid_job::wire_tag(t, local_));
        } catch (const net::peer_error& e) {
            detail::rethrow_sending(e, to, t);
        }
    }
    // A message to a fiber of this node goes straight into its mailbox.
    void deliver_here(const place& p, tag t, net::message m) {
        job_->ranks_[static_cast<std::size_t>(p.local)].box.deliver(rank(), hybrid_job::key(t.bits()), std::move(m));
    }

    friend class hybrid_job;
    hybrid_job* job_;
    int local_;
    hierarchy<hybrid_communicator>* levels_ = nullptr;  // run()'s, which outlives the body
};

template <class F>
auto hybrid_job::run(F&& body) {
    return csp::par_for(static_cast<std::size_t>(local_), [&](std::size_t i) {
        csp::this_process::set_name("rank " + std::to_string(first_rank(node_->rank()) + static_cast<int>(i)));
        hybrid_communicator comm(*this, static_cast<int>(i));
        std::optional<hierarchy<hybrid_communicator>> levels;  // before the body's groups, gone after them
        try {
            if (nodes() > 1 && size() > nodes()) {
                levels.emplace(comm, first_);
                comm.levels_ = &*levels;
            }
            return body(comm);
        } catch (...) {
            fail_here(std::current_exception());
            throw;
        }
    });
}

}  // namespace csp::collectives
