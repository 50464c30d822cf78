#pragma once
// Two levels: the ranks of each host, and one leader per host (STAPERS).
//
//   cc::hierarchy h(comm);                          // collective over comm, once
//   double t = cc::hierarchical::allreduce(h, x, cc::sum{});
//   cc::hierarchical::local_barrier(h);             // my host only (p_lwait)
//   auto v = cc::hierarchical::allreduce_across(h, big, cc::sum{});  // every rank of a host carries 1/k
//   auto all = cc::hierarchical::allgather(h, x);    // also reduce, broadcast,
//                                                   // gather, scan, exscan, barrier
//   cc::hierarchical::barrier(h);                   // everyone (p_wait)
//
// A hierarchy splits its communicator by host (group.hpp): `local()` holds
// the ranks of this host in rank order (the lowest is the leader, local rank
// 0), `leaders()` the leaders of all hosts in rank order, at leaders only.
// The host of a rank is the name it passes: by default this_host(), which is
// CSP_HOST if set, else the machine's host name. Ranks that are fibers of
// one process (local_communicator) all share a host.
//
// The hierarchical collectives aggregate inside each host first (through
// channels for fibers; for processes on the host group's own board in
// shared memory where the links between them go through it, as UCX's do,
// else through the links), run the flat
// collective among the leaders, and hand the result out inside each host:
// only one message per host crosses the network in each direction. Each
// level picks its own algorithm from the selection table. Rank order is kept
// when every host holds consecutive ranks (contiguous()); otherwise an op
// that does not commute runs the flat collective on the whole communicator.
//
// Streams: a hierarchical call in stream s uses stream s of both levels
// (below 256, context_pool.hpp); the hierarchy itself must outlive no
// communicator it was made from.
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <iterator>
#include <map>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "collectives/dispatch.hpp"
#include "collectives/group.hpp"
#include "collectives/revocation.hpp"
#include "csp/config.hpp"

namespace csp::collectives {

// This process's host: CSP_HOST if set, else the machine's host name.
inline std::string this_host() {
    if (auto h = csp::config::text("CSP_HOST")) return *h;
    char name[HOST_NAME_MAX + 1] = {};
    if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
    return name;
}

template <class C>
class hierarchy {
public:
    explicit hierarchy(C& comm, const std::string& host = this_host(), stream s = {}) : all_(&comm) {
        const auto hosts = allgather(comm, host, s);
        // A host is named by its lowest rank (the same at every rank): that
        // is its colour in the split, and its leader. Hosts come in the
        // order of their lowest ranks, the leaders' order.
        std::map<std::string, std::size_t, std::less<>> place_of;
        std::vector<int> first_of;  // per rank: the lowest rank of its host
        for (int r = 0; r < comm.size(); ++r) {
            const auto [at, fresh] = place_of.try_emplace(hosts[static_cast<std::size_t>(r)], members_of_hosts_.size());
            if (fresh) members_of_hosts_.emplace_back();
            auto& members = members_of_hosts_[at->second];
            if (!members.empty() && members.back() != r - 1) contiguous_ = false;  // its host's run was broken
            members.push_back(r);
            first_of.push_back(members.front());
        }
        local_.emplace(std::move(*split(comm, first_of[static_cast<std::size_t>(comm.rank())], comm.rank(), s)));
        local_->on_one_host();  // its collectives may meet in shared memory (group.hpp)
        leaders_ = split(comm, local_->rank() == 0 ? 0 : undefined, comm.rank(), s);
        // With as many ranks on every host (known alike at every rank), the
        // ranks of one local index across the hosts form a group too.
        if (hosts_of_equal_size()) across_ = split(comm, local_->rank(), comm.rank(), s);
    }

    // The same without a message, for a communicator whose ranks all know
    // the layout: host k holds ranks [firsts[k], firsts[k + 1]), the last
    // entry being comm.size(). Its groups take the pool's first contexts,
    // as a split would, so comm must hold no group yet at any rank (a hybrid
    // job's communicator, before its body runs: two_levels.hpp).
    hierarchy(C& comm, std::span<const int> firsts) : all_(&comm) {
        const auto taken = comm.contexts().taken();
        if (std::any_of(taken.begin(), taken.end(), [](std::uint64_t w) { return w != 0; }))
            throw usage_error("hierarchy of a known layout: the communicator holds groups already");
        const auto host = static_cast<std::size_t>(std::upper_bound(firsts.begin(), firsts.end(), comm.rank()) -
                                                   firsts.begin() - 1);
        const auto ranks_of = [&](std::size_t k) {
            std::vector<int> out(static_cast<std::size_t>(firsts[k + 1] - firsts[k]));
            std::iota(out.begin(), out.end(), firsts[k]);
            return out;
        };
        // Contexts 0, 1, 2, as three splits of a communicator without
        // groups would find them: the hosts' groups share one (they have no
        // member in common), the leaders' and the columns' one each.
        for (std::size_t k = 0; k + 1 < firsts.size(); ++k) members_of_hosts_.push_back(ranks_of(k));
        local_.emplace(group<C>(comm, ranks_of(host), 0));
        local_->on_one_host();
        if (local_->rank() == 0) leaders_.emplace(group<C>(comm, {firsts.begin(), firsts.end() - 1}, 1));
        if (hosts_of_equal_size()) {
            std::vector<int> column;
            for (std::size_t k = 0; k + 1 < firsts.size(); ++k) column.push_back(firsts[k] + local_->rank());
            across_.emplace(group<C>(comm, std::move(column), 2));
        }
    }

    C& all() const noexcept { return *all_; }
    group<C>& local() noexcept { return *local_; }
    // The leaders' group, at leaders; nullptr elsewhere.
    group<C>* leaders() noexcept { return leaders_ ? &*leaders_ : nullptr; }
    // The ranks of my local index on every host, one per host in rank
    // order, where every host holds as many ranks (more than one); nullptr
    // otherwise.
    group<C>* across() noexcept { return across_ ? &*across_ : nullptr; }
    bool is_leader() const noexcept { return leaders_.has_value(); }
    int hosts() const noexcept { return static_cast<int>(members_of_hosts_.size()); }
    // Whether every host holds consecutive ranks (so the two levels keep
    // rank order).
    bool contiguous() const noexcept { return contiguous_; }
    // The ranks of every host, the hosts in the leaders' order: where a
    // gather's parts from the leaders go, so the parts carry values alone.
    const std::vector<std::vector<int>>& members_of_hosts() const noexcept { return members_of_hosts_; }

private:
    C* all_;
    std::optional<group<C>> local_;
    std::optional<group<C>> leaders_;
    std::optional<group<C>> across_;
    // Whether every host holds as many ranks, more than one (so across()).
    bool hosts_of_equal_size() const {
        const std::size_t each = members_of_hosts_.front().size();
        return each > 1 && std::all_of(members_of_hosts_.begin(), members_of_hosts_.end(),
                                       [&](const std::vector<int>& m) { return m.size() == each; });
    }

    std::vector<std::vector<int>> members_of_hosts_;
    bool contiguous_ = true;
};

namespace hierarchical {

namespace detail {

// A hierarchical call runs on several levels, and a revocation reaches the
// ranks of one level only (revocation.hpp): a host's leader that fails
// tells its host, but the other hosts' ranks wait in the leaders' step or
// in their own host's hand-out. So an error at this rank (its own, a
// peer's failure, or a level's revocation) revokes stream s of every level
// this rank is in, and of the whole communicator, from the call on: each
// rank passes it on to the levels it shares with others, and every rank of
// every host hears.
template <class C, class F>
decltype(auto) guarded_levels(hierarchy<C>& h, stream s, std::string_view collective, F&& f) {
    namespace base = csp::collectives::detail;
    group<C>* const levels[] = {&h.local(), h.leaders(), h.across()};
    tag firsts[std::size(levels)];
    for (std::size_t i = 0; i < std::size(levels); ++i)
        if (levels[i]) firsts[i] = levels[i]->upcoming_tag(s);
    std::optional<tag> whole;
    if constexpr (base::has_upcoming_tag<C>) whole = h.all().upcoming_tag(s);
    try {
        return std::forward<F>(f)();
    } catch (...) {
        const auto notice = base::revocation_for_current_error(true, [&](const std::exception& e) {
            return base::revocation_text(h.all(), "hierarchical " + std::string(collective), s, std::nullopt, e);
        });
        if (notice) {
            for (std::size_t i = 0; i < std::size(levels); ++i)
                if (levels[i]) base::revoke(*levels[i], firsts[i], *notice);
            if (whole) base::revoke(h.all(), *whole, *notice);
        }
        throw;
    }
}

// Where `root` (a rank of the whole communicator) sits: its local rank is
// known only on its host, so a hierarchy call that takes a root first tells
// every rank which leader stands for it, through the local level.
template <class C>
int is_root_here(hierarchy<C>& h, int root) {
    for (int i = 0; i < h.local().size(); ++i)
        if (h.local().member(i) == root) return i;
    return -1;
}

// The index, in the leaders' group, of the leader whose host holds `root`,
// at a leader. Where every host holds consecutive ranks, the leaders (each
// its host's lowest rank, in rank order) split the ranks at their own, so
// the root's is the last leader not above it, known without a message;
// otherwise every leader learns it in one allreduce (maximum) over the
// leaders.
template <class C>
int leader_index_of(hierarchy<C>& h, int root, stream s) {
    group<C>* leaders = h.leaders();
    if (h.contiguous()) {
        const auto& firsts = leaders->members();
        return static_cast<int>(std::upper_bound(firsts.begin(), firsts.end(), root) - firsts.begin()) - 1;
    }
    const int mine = is_root_here(h, root) >= 0 ? leaders->rank() : -1;
    return csp::collectives::allreduce(*leaders, mine, maximum{}, s);
}

}  // namespace detail

// v0 op v1 op ... op v(n-1) at every rank, for a vector and an op that
// commutes and acts element by element, carried by every rank of each host
// instead of its leader alone; needs hosts that hold as many ranks each
// (h.across()), else usage_error. A reduce_scatter inside each host leaves
// local rank i with block i of the host's fold; each block is folded over
// the hosts by the ranks of its local index, every host's ranks at once,
// each moving 1/k of the vector; an allgather inside each host puts the
// blocks together. The network carries as many bytes per host as in the
// leaders' scheme (allreduce, below), through k ranks instead of one: for
// hosts whose ranks have cores (and links) of their own. Not the default:
// where a host's ranks share its cores it measured no faster (README).
template <class C, class T, class Op>
T allreduce_across(hierarchy<C>& h, T value, const Op& op, stream s = {}) {
    return detail::guarded_levels(h, s, "allreduce", [&]() -> T {
        if constexpr (!csp::collectives::detail::is_vector<T>::value) {
            throw usage_error(
                "hierarchical allreduce_across: cuts a vector into blocks; it cannot take a single value");
        } else {
            if (!commutes(op) || !acts_elementwise(op))
                throw usage_error(
                    "hierarchical allreduce_across: needs an op that commutes and acts element by element");
            if (h.across() == nullptr)
                throw usage_error(
                    "hierarchical allreduce_across: needs hosts that hold as many ranks each, more than one");
            const auto k = static_cast<std::size_t>(h.local().size()), length = value.size();
            const auto counts = csp::collectives::detail::even_counts(length, k);
            auto mine = csp::collectives::reduce_scatter(h.local(), std::move(value), counts, op, s);
            mine = csp::collectives::allreduce(*h.across(), std::move(mine), op, s);
            const auto blocks = csp::collectives::allgather(h.local(), std::move(mine), s);
            T out;
            out.reserve(length);
            for (const auto& b : blocks) out.insert(out.end(), b.begin(), b.end());
            return out;
        }
    });
}

// v0 op v1 op ... op v(n-1) at every rank.
template <class C, class T, class Op>
T allreduce(hierarchy<C>& h, T value, const Op& op, stream s = {}) {
    return detail::guarded_levels(h, s, "allreduce", [&]() -> T {
        if (!h.contiguous() && !commutes(op)) return csp::collectives::allreduce(h.all(), std::move(value), op, s);
        std::size_t length = 0;
        if constexpr (csp::collectives::detail::element_vector<T>) length = value.size();
        auto here = csp::collectives::reduce(h.local(), std::move(value), op, 0, s);
        if (h.is_leader()) here = csp::collectives::allreduce(*h.leaders(), std::move(*here), op, s);
        if constexpr (csp::collectives::detail::element_vector<T>) {
            if (acts_elementwise(op)) {
                // The result is as long as every rank's vector (an element-wise
                // op folds vectors of one length), so the hand-out inside the
                // host goes into a buffer of that length, which the table may
                // fill through the host's board (broadcast_into) where a plain
                // broadcast, whose size only the root knows, passes messages.
                T result = here ? std::move(*here) : T(length);
                csp::collectives::broadcast_into(h.local(), std::span(result), 0, s);
                return result;
            }
        }
        return csp::collectives::broadcast(h.local(), here ? std::move(*here) : T{}, 0, s);
    });
}

// The fold at `root` only.
template <class C, class T, class Op>
std::optional<T> reduce(hierarchy<C>& h, T value, const Op& op, int root = 0, stream s = {}) {
    return detail::guarded_levels(h, s, "reduce", [&]() -> std::optional<T> {
        topology::check(h.all().rank(), h.all().size(), root);
        if (!h.contiguous() && !commutes(op)) return csp::collectives::reduce(h.all(), std::move(value), op, root, s);
        auto here = csp::collectives::reduce(h.local(), std::move(value), op, 0, s);
        if (h.is_leader()) {
            const int to = detail::leader_index_of(h, root, s);
            here = csp::collectives::reduce(*h.leaders(), std::move(*here), op, to, s);
        }
        // On the root's host, its leader hands the result over.
        const int at = detail::is_root_here(h, root);
        if (at < 0) return std::nullopt;
        const tag t = h.local().next_tag(s);
        if (at == 0) return h.local().rank() == 0 ? here : std::nullopt;
        if (h.local().rank() == 0) h.local().send(at, t, std::move(*here));
        if (h.local().rank() == at) return h.local().template receive<T>(0, t);
        return std::nullopt;
    });
}

// The root's value at every rank.
template <class C, class T>
T broadcast(hierarchy<C>& h, T value, int root = 0, stream s = {}) {
    return detail::guarded_levels(h, s, "broadcast", [&]() -> T {
        topology::check(h.all().rank(), h.all().size(), root);
        const int at = detail::is_root_here(h, root);
        if (at > 0) {  // the root hands its value to its leader
            const tag t = h.local().next_tag(s);
            if (h.local().rank() == at) h.local().send(0, t, value);
            if (h.local().rank() == 0) value = h.local().template receive<T>(at, t);
        }
        if (h.is_leader()) {
            const int from = detail::leader_index_of(h, root, s);
            value = csp::collectives::broadcast(*h.leaders(), std::move(value), from, s);
        }
        return csp::collectives::broadcast(h.local(), std::move(value), 0, s);
    });
}

namespace detail {
// Every host's values (in local order, the hosts in the leaders' order) in
// rank order. The parts are the values alone, so a value the flat gather
// can send (a plain struct as its bytes) crosses the leaders' level too.
template <class C, class T>
std::vector<T> place_by_rank(const hierarchy<C>& h, std::vector<std::vector<T>> parts) {
    std::vector<T> all(static_cast<std::size_t>(h.all().size()));
    const auto& members = h.members_of_hosts();
    for (std::size_t k = 0; k < parts.size(); ++k)
        for (std::size_t i = 0; i < parts[k].size(); ++i)
            all[static_cast<std::size_t>(members[k][i])] = std::move(parts[k][i]);
    return all;
}
}  // namespace detail

// Every rank's value at `root`, in rank order (nothing elsewhere): gathered
// inside each host, then each leader's part (its host's values) to the
// leader of the root's host, which puts them in rank order
// (members_of_hosts) and hands the whole to the root.
template <class C, class T>
std::optional<std::vector<T>> gather(hierarchy<C>& h, T value, int root = 0, stream s = {}) {
    return detail::guarded_levels(h, s, "gather", [&]() -> std::optional<std::vector<T>> {
        topology::check(h.all().rank(), h.all().size(), root);
        auto here = csp::collectives::gather(h.local(), std::move(value), 0, s);
        std::optional<std::vector<T>> all;
        if (h.is_leader()) {
            const int to = detail::leader_index_of(h, root, s);
            auto parts = csp::collectives::gather(*h.leaders(), std::move(*here), to, s);
            if (parts) all = detail::place_by_rank(h, std::move(*parts));
        }
        const int at = detail::is_root_here(h, root);
        if (at <= 0) return all;
        const tag t = h.local().next_tag(s);
        if (h.local().rank() == 0) h.local().send(at, t, std::move(*all));
        if (h.local().rank() == at) return h.local().template receive<std::vector<T>>(0, t);
        return std::nullopt;
    });
}

// Every rank's value at every rank, in rank order.
template <class C, class T>
std::vector<T> allgather(hierarchy<C>& h, T value, stream s = {}) {
    return detail::guarded_levels(h, s, "allgather", [&]() -> std::vector<T> {
        auto here = csp::collectives::gather(h.local(), std::move(value), 0, s);
        std::vector<T> all;
        if (h.is_leader()) {
            // A gather and a broadcast rather than an allgather of the hosts'
            // parts: every message is one host's values or all of them, never
            // a vector of vectors, and neither step's algorithm depends on a
            // part's size (the hosts' parts differ where their counts do).
            auto parts = csp::collectives::gather(*h.leaders(), std::move(*here), 0, s);
            if (parts) all = detail::place_by_rank(h, std::move(*parts));
            all = csp::collectives::broadcast(*h.leaders(), std::move(all), 0, s);
        }
        return csp::collectives::broadcast(h.local(), std::move(all), 0, s);
    });
}

// v0 op ... op v(me) at each rank. With hosts of consecutive ranks: a scan
// inside each host and each host's total at its leader, an exscan of the
// totals among leaders, and each leader's offset folded in front of its
// host's prefixes. Otherwise the flat scan.
namespace detail {
// The fold of every host before this one (nothing on the first), at every
// rank of this host: each host's total at its leader, an exscan of the
// totals among leaders, the leader's result broadcast inside the host.
template <class C, class T, class Op>
std::optional<T> hosts_before(hierarchy<C>& h, const T& value, const Op& op, stream s) {
    auto total = csp::collectives::reduce(h.local(), value, op, 0, s);
    std::optional<T> offset;
    if (h.is_leader()) offset = csp::collectives::exscan(*h.leaders(), std::move(*total), op, s);
    return csp::collectives::broadcast(h.local(), std::move(offset), 0, s);
}
}  // namespace detail

template <class C, class T, class Op>
T scan(hierarchy<C>& h, T value, const Op& op, stream s = {}) {
    return detail::guarded_levels(h, s, "scan", [&]() -> T {
        if (!h.contiguous()) return csp::collectives::scan(h.all(), std::move(value), op, s);
        const auto offset = detail::hosts_before(h, value, op, s);
        T prefix = csp::collectives::scan(h.local(), std::move(value), op, s);
        // offset op prefix
        if (offset) csp::collectives::detail::combine_into(op, prefix, std::as_const(*offset), true);
        return prefix;
    });
}

// v0 op ... op v(me-1) at each rank but rank 0, which gets nothing.
template <class C, class T, class Op>
std::optional<T> exscan(hierarchy<C>& h, T value, const Op& op, stream s = {}) {
    return detail::guarded_levels(h, s, "exscan", [&]() -> std::optional<T> {
        if (!h.contiguous()) return csp::collectives::exscan(h.all(), std::move(value), op, s);
        const auto offset = detail::hosts_before(h, value, op, s);
        auto prefix = csp::collectives::exscan(h.local(), std::move(value), op, s);
        if (!offset) return prefix;
        if (!prefix) return offset;
        csp::collectives::detail::combine_into(op, *prefix, std::as_const(*offset), true);  // offset op prefix
        return prefix;
    });
}

// Returns once every rank of this host has called it (STAPERS's p_lwait).
template <class C>
void local_barrier(hierarchy<C>& h, stream s = {}) {
    return detail::guarded_levels(h, s, "barrier", [&]() -> void {
        csp::collectives::barrier(h.local(), s);
    });
}

// Returns once every rank of the communicator has called it (p_wait): the
// host's ranks report to their leader, the leaders meet, each leader
// releases its host.
template <class C>
void barrier(hierarchy<C>& h, stream s = {}) {
    return detail::guarded_levels(h, s, "barrier", [&]() -> void {
        csp::collectives::reduce(h.local(), std::uint8_t{0}, maximum{}, 0, s);
        if (h.is_leader()) csp::collectives::barrier(*h.leaders(), s);
        csp::collectives::broadcast(h.local(), std::uint8_t{0}, 0, s);
    });
}

}  // namespace hierarchical

// The table's two-level algorithms (two_levels.hpp) find these by
// argument-dependent lookup: that header comes before this one.
template <class C, class T, class Op>
T allreduce_in_two_levels(hierarchy<C>& h, T value, const Op& op, stream s) {
    return hierarchical::allreduce(h, std::move(value), op, s);
}
template <class C>
void barrier_in_two_levels(hierarchy<C>& h, stream s) {
    hierarchical::barrier(h, s);
}
template <class C, class T, class Op>
std::optional<T> reduce_in_two_levels(hierarchy<C>& h, T value, const Op& op, int root, stream s) {
    return hierarchical::reduce(h, std::move(value), op, root, s);
}
template <class C, class T>
std::optional<std::vector<T>> gather_in_two_levels(hierarchy<C>& h, T value, int root, stream s) {
    return hierarchical::gather(h, std::move(value), root, s);
}
template <class C, class T>
std::vector<T> allgather_in_two_levels(hierarchy<C>& h, T value, stream s) {
    return hierarchical::allgather(h, std::move(value), s);
}

}  // namespace csp::collectives
