#pragma once
// Runs a topology::schedule (rounds of transfers) at one rank.
//
// In each round a rank first sends the value it had at the start of the round
// to every receiver it has in that round, then receives its incoming
// transfers at once (one process each), then folds them in transfer order.
// Sending first is what lets both ends of a butterfly exchange use their
// pre-round values. Each round has its own tag step. A lone incoming
// transfer that folds a std::vector with a built-in op over a net or hybrid
// communicator is folded from the message's bytes, not decoded first.
#include <cstddef>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/detail/peers.hpp"
#include "collectives/receive_view.hpp"
#include "collectives/topology.hpp"

namespace csp::collectives {

// One rank's part of a schedule: per round, what it sends and receives.
struct rank_plan {
    struct round {
        std::vector<int> send_to;
        std::vector<topology::transfer> receive;
    };
    std::vector<round> rounds;
    bool participant = false;
    bool receiver = false;
};

rank_plan plan_for(const topology::schedule& s, int rank);

// Runs `plan` with this rank's contribution (a value iff it participates).
// Returns the result iff the rank is a receiver.
template <class C, class T, class Op>
std::optional<T> run_plan(C& comm, const rank_plan& plan, std::optional<T> value, const Op& op, tag t) {
    if (plan.participant != value.has_value())
        throw usage_error(plan.participant ? "rank " + std::to_string(comm.rank()) +
                                                 " is a participant of this reduction but gave no value"
                                           : "rank " + std::to_string(comm.rank()) +
                                                 " gave a value to a reduction it does not take part in");
    if (plan.rounds.size() > 255) throw usage_error("schedule has more than 255 rounds");
    for (std::size_t r = 0; r < plan.rounds.size(); ++r) {
        const auto& round = plan.rounds[r];
        const tag rt = t.step(static_cast<std::uint8_t>(r));
        if (!round.send_to.empty()) {
            if (!value) throw usage_error("schedule error: rank " + std::to_string(comm.rank()) + " sends in round " +
                                          std::to_string(r + 1) + " before it holds a value");
            detail::send_to_each(comm, round.send_to, rt, *value);
        }
        if (round.receive.empty()) continue;
        auto take = [&](const topology::transfer& x, T&& got) {
            if (x.kind == topology::transfer_kind::deliver || !value) value = std::move(got);
            else detail::combine_into(op, *value, std::as_const(got), x.sender_first);
        };
        if (round.receive.size() == 1) {  // the common case: no receiving process, no vector
            const auto& x = round.receive.front();
            if (x.kind != topology::transfer_kind::deliver && value)
                detail::combine_received(comm, x.from, rt, op, *value, x.sender_first);
            else
                take(x, comm.template receive<T>(x.from, rt));
            continue;
        }
        std::vector<T> got =
            detail::receive_from_each<T>(comm, round.receive, rt, [](const topology::transfer& x) { return x.from; });
        for (std::size_t i = 0; i < got.size(); ++i) take(round.receive[i], std::move(got[i]));
    }
    if (!plan.receiver) return std::nullopt;
    return value;
}

namespace detail {

// The butterfly depends on the group size alone; its plans are built once
// per size and shared.
std::shared_ptr<const std::vector<rank_plan>> butterfly_plans(int size);

}  // namespace detail
}  // namespace csp::collectives
