#pragma once
// A communicator that records what ran over it.
//
//   csp::collectives::trace_log log;
//   csp::collectives::run_local(8, [&](auto& c) {
//       csp::collectives::traced tc(c, log);
//       csp::collectives::allreduce(tc, 1, csp::collectives::sum{});
//   });
//   log.algorithms();   // {"allreduce butterfly", ...} per rank and call
//   log.events();       // every send and completed receive, in one order
//   log.fusions();      // per shared-variable force point: updates fused
//
// Events get one global order number as they are recorded: a receive is
// recorded when it completes, so the order shows which receives finished
// first.
#include <cstdint>
#include <mutex>
#include <iosfwd>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/selection.hpp"
#include "collectives/shared_board.hpp"

namespace csp::collectives {

struct trace_event {
    enum class kind { algorithm, send, receive, fusion };
    kind what;
    std::uint64_t order;
    int rank;
    int peer = -1;  // the other end of a send or receive
    tag t;
    std::string name;  // for kind::algorithm: "collective algorithm"
    // For kind::fusion (a shared-variable force point, shared_group.hpp):
    // the updates that one reduction resolved, and the variables they were to.
    std::uint64_t updates = 0;
    std::uint64_t slots = 0;
};

class trace_log {
public:
    void record(trace_event e);
    std::vector<trace_event> events() const;
    std::vector<trace_event> of_kind(trace_event::kind k) const;
    // "collective algorithm" of each call that was recorded, in order.
    std::vector<std::string> algorithms() const;
    // Per force point of shared variables, in order: how many updates the
    // one reduction carried (the fusion events).
    std::vector<trace_event> fusions() const { return of_kind(trace_event::kind::fusion); }
    void clear();
    void print(std::ostream& os) const;

private:
    mutable std::mutex lock_;
    std::vector<trace_event> events_;
};

template <class C>
class traced {
public:
    traced(C& inner, trace_log& log) : inner_(&inner), log_(&log) {}

    int rank() const { return inner_->rank(); }
    int size() const { return inner_->size(); }
    tag next_tag(stream s = {}) { return inner_->next_tag(s); }
    tag upcoming_tag(stream s = {})
        requires requires(C& c, stream x) { c.upcoming_tag(x); }
    {
        return inner_->upcoming_tag(s);
    }
    auto& contexts() { return inner_->contexts(); }
    // The inner communicator's shared boards, if it has them: tracing does
    // not change which algorithm runs (a board meeting sends no messages,
    // so the trace shows the algorithm alone).
    shared_board* board(stream s)
        requires requires(C& c, stream x) { c.board(x); }
    {
        return inner_->board(s);
    }
    // Its levels, likewise (two_levels.hpp): their steps are messages of
    // the levels' groups, over the inner communicator.
    auto* two_levels() const
        requires requires(const C& c) { c.two_levels(); }
    {
        return inner_->two_levels();
    }
    bool shares_memory() const
        requires requires(const C& c) { c.shares_memory(); }
    {
        return inner_->shares_memory();
    }
    csp::collectives::link_level link_level() const
        requires requires(const C& c) { c.link_level(); }
    {
        return inner_->link_level();
    }
    bool job_oversubscribed() const
        requires requires(const C& c) { c.job_oversubscribed(); }
    {
        return inner_->job_oversubscribed();
    }
    bool receives_through_io() const
        requires requires(const C& c) { c.receives_through_io(); }
    {
        return inner_->receives_through_io();
    }

    template <class T>
    void send(int to, tag t, T&& value) {
        log_->record({trace_event::kind::send, 0, rank(), to, t, {}});
        inner_->send(to, t, std::forward<T>(value));
    }
    template <class T>
    T receive(int from, tag t) {
        T v = inner_->template receive<T>(from, t);
        log_->record({trace_event::kind::receive, 0, rank(), from, t, {}});
        return v;
    }
    template <class T>
    received<T> receive_any(tag t) {
        auto m = inner_->template receive_any<T>(t);
        log_->record({trace_event::kind::receive, 0, rank(), m.source, t, {}});
        return m;
    }
    // Where the inner communicator has it (a group's, net_communicator's):
    // the failure of a rank outside `among` does not fail the receive.
    template <class T>
    received<T> receive_any_of(tag t, std::span<const int> among)
        requires requires(C& c) { c.template receive_any_of<T>(t, std::span<const int>{}); }
    {
        auto m = inner_->template receive_any_of<T>(t, among);
        log_->record({trace_event::kind::receive, 0, rank(), m.source, t, {}});
        return m;
    }

    void record_algorithm(const algorithm_info& a, tag t) {
        log_->record({trace_event::kind::algorithm, 0, rank(), -1, t,
                      std::string(a.collective) + ' ' + std::string(a.name)});
    }

    // A shared-variable force point (shared_group.hpp): `updates` updates of
    // `slots` variables went into the one reduction just recorded.
    void record_fusion(std::size_t updates, std::size_t slots) {
        trace_event e{trace_event::kind::fusion, 0, rank(), -1, tag{}, "shared fusion"};
        e.updates = updates;
        e.slots = slots;
        log_->record(std::move(e));
    }

private:
    C* inner_;
    trace_log* log_;
};

}  // namespace csp::collectives
