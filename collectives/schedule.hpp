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
#include <map>
#include <memory>
#include <mutex>
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

inline rank_plan plan_for(const topology::schedule& s, int rank) {
    rank_plan p;
    p.rounds.resize(s.rounds.size());
    for (std::size_t r = 0; r < s.rounds.size(); ++r)
        for (const auto& t : s.rounds[r]) {
            if (t.from == rank) p.rounds[r].send_to.push_back(t.to);
            if (t.to == rank) p.rounds[r].receive.push_back(t);
        }
    for (int x : s.participants) p.participant |= x == rank;
    for (int x : s.receivers) p.receiver |= x == rank;
    return p;
}

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
inline std::shared_ptr<const std::vector<rank_plan>> butterfly_plans(int size) {
    static std::mutex lock;
    static std::map<int, std::shared_ptr<const std::vector<rank_plan>>> cache;
    std::lock_guard lk(lock);
    auto& slot = cache[size];
    if (!slot) {
        auto s = topology::butterfly_schedule(size);
        auto plans = std::make_shared<std::vector<rank_plan>>();
        for (int r = 0; r < size; ++r) plans->push_back(plan_for(s, r));
        slot = std::move(plans);
    }
    return slot;
}

}  // namespace detail
}  // namespace csp::collectives
