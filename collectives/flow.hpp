#pragma once
// Collectives as processes with channel ends (Aspen's flow statements).
//
// The program's root builds the reduction and wires it into its network; the
// participants only write their contribution to one end and, later, read the
// result from another. They know nothing of the algorithm, and they may
// compute between the two steps.
//
//   csp::collectives::reduction<double, sum> r1({0, 1, 2, 3}, {0, 2});      // P, R
//   csp::collectives::reduction<double, product> r2({1, 2}, {3});
//   csp::par(r1.network(), r2.network(),
//            [&, in = r1.contribution(1), ...] { in.write(x); work(); ... });
//
// Contribution ends hold one value, so writing never waits for the others.
// The reduction runs once per round of contributions; it ends when its
// participants retire (or poison) their contribution ends, and then retires
// its result ends. A receiver that poisons its result end stops it too: every
// end of the reduction is poisoned, and the network ends. reduction_rank() is
// the same loop for one rank over any communicator, for programs whose ranks
// are nodes.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "collectives/aspen_reduce.hpp"
#include "collectives/local_communicator.hpp"
#include "csp/channel.hpp"
#include "csp/process.hpp"

namespace csp::collectives {

namespace detail {
// Rounds carry optional values: an empty one says "no more rounds" and wins
// over any value, so a participant that ran out of input ends every rank.
template <class Op>
struct ending_op {
    const Op* op;
    bool commutes = true;
    template <class T>
    std::optional<T> operator()(const std::optional<T>& a, const std::optional<T>& b) const {
        if (!a || !b) return std::nullopt;
        return (*op)(*a, *b);
    }
};
}  // namespace detail

// One rank's part of a repeated reduction: read a contribution (if a
// participant), reduce, write the result (if a receiver), until the
// contributions end. The reduction's rounds use stream `s` of `comm`.
template <class T, class C, class Op>
void reduction_rank(C& comm, const std::vector<int>& participants, const std::vector<int>& receivers, const Op& op,
                    stream s, std::optional<csp::reader<T>> contribution, std::optional<csp::writer<T>> result) {
    const detail::ending_op<Op> lifted{&op};
    const rank_plan plan = aspen_plan(comm, participants, receivers);
    for (;;) {
        std::optional<std::optional<T>> mine;
        if (contribution) {
            try {
                mine.emplace(contribution->read());
            } catch (const csp::retired_error&) {
                mine.emplace(std::nullopt);
            } catch (const csp::poisoned_error&) {
                mine.emplace(std::nullopt);
            }
        }
        auto out = aspen_reduce(comm, std::move(mine), plan, lifted, s);
        const bool ended = out ? !out->has_value() : (mine && !mine->has_value());
        if (result && out && out->has_value()) result->write(std::move(**out));
        if (ended || (!out && !contribution)) {
            if (result) result->retire();
            return;
        }
    }
}

template <class T, class Op>
class reduction {
public:
    reduction(std::vector<int> participants, std::vector<int> receivers, Op op = {}, std::string name = "reduction")
        : participants_(std::move(participants)), receivers_(std::move(receivers)), op_(std::move(op)),
          name_(std::move(name)) {
        topology::aspen_schedule(participants_, receivers_);  // checks the sets
        if (!commutes(op_)) throw usage_error(name_ + ": Aspen's reduce needs an op that commutes");
        for (int p : participants_)
            contributions_.emplace(p, csp::channel<T>{name_ + ".in" + std::to_string(p), csp::buffer::fifo(1)});
        for (int r : receivers_)
            results_.emplace(r, csp::channel<T>{name_ + ".out" + std::to_string(r), csp::buffer::fifo(1)});
    }

    csp::writer<T> contribution(int rank) const { return find(contributions_, rank, "participant").writer(); }
    csp::reader<T> result(int rank) const { return find(results_, rank, "receiver").reader(); }

    // The reduction's process network: one process per rank in P or R.
    auto network() const {
        // The process keeps its own copy: channels are handles.
        return csp::proc(name_, [self = *this] {
            std::set<int> ranks(self.participants_.begin(), self.participants_.end());
            ranks.insert(self.receivers_.begin(), self.receivers_.end());
            const std::vector<int> order(ranks.begin(), ranks.end());
            local_group group(*ranks.rbegin() + 1);
            try {
                csp::par_for(order.size(), [&](std::size_t i) {
                    const int r = order[i];
                    csp::this_process::set_name(self.name_ + "[" + std::to_string(r) + "]");
                    local_communicator comm(group, r);
                    std::optional<csp::reader<T>> in;
                    std::optional<csp::writer<T>> out;
                    if (self.contributions_.count(r)) in = self.contributions_.at(r).reader();
                    if (self.results_.count(r)) out = self.results_.at(r).writer();
                    try {
                        reduction_rank<T>(comm, self.participants_, self.receivers_, self.op_, stream{}, in, out);
                    } catch (...) {
                        // A rank that fails (its receiver poisoned the result
                        // end, say) fails the others' receives, and each
                        // rank poisons its own ends: the whole network
                        // stops, and the processes using it hear.
                        group.fail(std::current_exception());
                        if (in) in->poison();
                        if (out) out->poison();
                        throw;
                    }
                });
            } catch (const csp::poisoned_error&) {
                // Poison is how a network shuts down: it ends this one quietly.
            }
        });
    }

private:
    static const csp::channel<T>& find(const std::map<int, csp::channel<T>>& m, int rank, const char* role) {
        auto it = m.find(rank);
        if (it == m.end())
            throw usage_error("rank " + std::to_string(rank) + " is not a " + role + " of this reduction");
        return it->second;
    }

    std::vector<int> participants_, receivers_;
    Op op_;
    std::string name_;
    std::map<int, csp::channel<T>> contributions_, results_;
};

}  // namespace csp::collectives
