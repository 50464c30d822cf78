#include "collectives/topology.hpp"

#include <algorithm>
#include <ostream>
#include <set>

namespace csp::collectives::topology {

void bad_arguments(int rank, int size, int root) {
    if (size < 1) throw usage_error("group size " + std::to_string(size) + " is not positive");
    if (rank < 0 || rank >= size)
        throw usage_error("rank " + std::to_string(rank) + " is outside the group of " + std::to_string(size));
    throw usage_error("root " + std::to_string(root) + " is outside the group of " + std::to_string(size));
}

std::ostream& operator<<(std::ostream& os, const schedule& s) {
    for (std::size_t r = 0; r < s.rounds.size(); ++r) {
        os << "round " << r + 1 << ":";
        for (const auto& t : s.rounds[r])
            os << ' ' << t.from << (t.kind == transfer_kind::combine ? "->" : "=>") << t.to;
        os << '\n';
    }
    return os;
}

schedule butterfly_schedule(int size) {
    if (size < 1) throw usage_error("group size " + std::to_string(size) + " is not positive");
    schedule s;
    for (int r = 0; r < size; ++r) s.participants.push_back(r), s.receivers.push_back(r);
    const int p2 = floor_pow2(size), rem = size - p2;
    auto real = [&](int v) { return v < rem ? 2 * v + 1 : v + rem; };
    if (rem > 0) {
        auto& fold = s.rounds.emplace_back();
        for (int i = 0; i < rem; ++i) fold.push_back({2 * i, 2 * i + 1, transfer_kind::combine, true});
    }
    for (int mask = 1; mask < p2; mask <<= 1) {
        auto& round = s.rounds.emplace_back();
        for (int v = 0; v < p2; ++v) {
            int partner = v ^ mask;
            round.push_back({real(partner), real(v), transfer_kind::combine, partner < v});
        }
    }
    if (rem > 0) {
        auto& unfold = s.rounds.emplace_back();
        for (int i = 0; i < rem; ++i) unfold.push_back({2 * i + 1, 2 * i, transfer_kind::deliver, false});
    }
    return s;
}

schedule aspen_schedule(const std::vector<int>& P, const std::vector<int>& R) {
    auto check_set = [](const std::vector<int>& v, const char* what) {
        std::set<int> seen;
        for (int x : v) {
            if (x < 0)
                throw usage_error(std::string("Aspen reduce: negative rank ") + std::to_string(x) + " in " + what);
            if (!seen.insert(x).second)
                throw usage_error(std::string("Aspen reduce: rank ") + std::to_string(x) + " appears twice in " + what);
        }
        return seen;
    };
    const std::set<int> pset = check_set(P, "the participants");
    const std::set<int> rset = check_set(R, "the receivers");
    if (pset.empty()) throw usage_error("Aspen reduce: no participants");

    schedule s;
    s.participants.assign(pset.begin(), pset.end());
    s.receivers.assign(rset.begin(), rset.end());
    if (rset.empty()) return s;

    // Numbering: receiving participants, then the other participants; the
    // non-participant receivers are kept apart, in rank order.
    std::vector<int> order, rnp;
    for (int x : pset) if (rset.count(x)) order.push_back(x);
    std::size_t rp = order.size();
    for (int x : pset) if (!rset.count(x)) order.push_back(x);
    for (int x : rset) if (!pset.count(x)) rnp.push_back(x);

    auto fold_into_lower = [&](std::size_t keep) {
        auto& round = s.rounds.emplace_back();
        for (std::size_t x = keep; x < order.size(); ++x)
            round.push_back({order[x], order[x - keep], transfer_kind::combine, false});
        // Receivers folded away now get the result like non-participants.
        for (std::size_t x = keep; x < std::min(rp, order.size()); ++x) rnp.push_back(order[x]);
        rp = std::min(rp, keep);
        order.resize(keep);
    };

    if (std::size_t p2 = static_cast<std::size_t>(floor_pow2(static_cast<int>(order.size()))); p2 != order.size())
        fold_into_lower(p2);
    while (order.size() >= 2 * std::max(rp, rnp.size()) && order.size() > 1) fold_into_lower(order.size() / 2);

    const std::size_t m = order.size();
    const std::size_t k = std::min(std::max(rp, rnp.size()), m);
    for (std::size_t mask = 1; mask < m; mask <<= 1) {
        const bool last = (mask << 1) >= m;
        auto& round = s.rounds.emplace_back();
        for (std::size_t x = 0; x < m; ++x)
            if (!last || x < k) round.push_back({order[x ^ mask], order[x], transfer_kind::combine, false});
    }

    std::vector<int> holders(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k));
    std::size_t next = 0;
    while (next < rnp.size()) {
        auto& round = s.rounds.emplace_back();
        const std::size_t senders = holders.size();
        for (std::size_t h = 0; h < senders && next < rnp.size(); ++h, ++next) {
            round.push_back({holders[h], rnp[next], transfer_kind::deliver, false});
            holders.push_back(rnp[next]);
        }
    }
    return s;
}

}  // namespace csp::collectives::topology
