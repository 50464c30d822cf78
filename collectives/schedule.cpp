#include "collectives/schedule.hpp"

#include <map>
#include <mutex>

namespace csp::collectives {

rank_plan plan_for(const topology::schedule& s, int rank) {
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

namespace detail {

std::shared_ptr<const std::vector<rank_plan>> butterfly_plans(int size) {
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
