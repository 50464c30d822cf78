#include "collectives/selection.hpp"

#include <algorithm>
#include <ostream>
#include <sstream>

namespace csp::collectives {

namespace {
std::string pad(std::string_view s, std::size_t w) {
    std::string out(s);
    out.resize(std::max(w, out.size() + 1), ' ');
    return out;
}
}  // namespace

selection& selection::global() {
    static selection s(from_environment());
    return s;
}

selection::selection(std::map<std::string, std::string, std::less<>> forced)
    : forced_(std::move(forced)), any_forced_(!forced_.empty()) {}

std::optional<algorithm_info> selection::find(std::string_view collective, std::string_view name) {
    for (const auto& a : registry::every_algorithm)
        if (a.collective == collective && a.name == name) return a;
    return std::nullopt;
}

std::map<std::string, std::string, std::less<>> selection::parse_overrides(std::string_view spec) {
    std::map<std::string, std::string, std::less<>> out;
    std::istringstream items{std::string(spec)};
    for (std::string item; std::getline(items, item, ',');) {
        if (item.empty()) continue;
        auto eq = item.find('=');
        if (eq == std::string::npos)
            throw usage_error("CSP_COLLECTIVES: \"" + item + "\" is not collective=algorithm");
        std::string c = item.substr(0, eq), a = item.substr(eq + 1);
        validate(c, a);
        out[c] = a;
    }
    return out;
}

void selection::force(std::string_view collective, std::string_view algorithm) {
    validate(collective, algorithm);
    std::lock_guard lk(lock_);
    forced_[std::string(collective)] = std::string(algorithm);
    any_forced_.store(true, std::memory_order_release);
}

void selection::unforce(std::string_view collective) {
    std::lock_guard lk(lock_);
    if (auto it = forced_.find(collective); it != forced_.end()) forced_.erase(it);
    any_forced_.store(!forced_.empty(), std::memory_order_release);
}

void selection::unforce_all() {
    std::lock_guard lk(lock_);
    forced_.clear();
    any_forced_.store(false, std::memory_order_release);
}

std::optional<std::string_view> selection::forced_choice(const request& r) const {
    std::lock_guard lk(lock_);
    if (auto it = forced_.find(r.collective); it != forced_.end()) {
        auto a = find(r.collective, it->second);
        if (usable(*a, r)) return a->name;
    }
    return std::nullopt;
}

void selection::no_algorithm(const request& r) {
    throw usage_error("no algorithm for collective \"" + std::string(r.collective) + "\"");
}

void selection::print_table(std::ostream& os) const {
    os << "collective      algorithm           ranks     bytes               level     job        "
          "op                       needs\n";
    for (const auto& rule : default_rules) {
        std::ostringstream ranks, bytes;
        ranks << (rule.max_ranks == any_size ? std::string("any") : "<= " + std::to_string(rule.max_ranks));
        const bool below = rule.below_bytes != no_limit;
        if (rule.min_bytes != 0) bytes << ">= " << rule.min_bytes << (below ? ", " : "");
        else if (!below) bytes << "any";
        if (below) bytes << "< " << rule.below_bytes;
        const char* level = rule.level == link_level::host      ? "host"
                            : rule.level == link_level::network ? "network"
                                                                : "any";
        const char* job = rule.crowd == crowding::crowded     ? "crowded"
                          : rule.crowd == crowding::uncrowded ? "uncrowded"
                                                              : "any";
        const auto a = *find(rule.collective, rule.algorithm);
        const std::string op = a.needs_commuting_op && a.needs_elementwise ? "commuting, element-wise"
                               : a.needs_commuting_op                      ? "commuting"
                               : a.needs_elementwise                       ? "element-wise"
                                                                           : "any";
        os << pad(rule.collective, 16) << pad(rule.algorithm, 20) << pad(ranks.str(), 10) << pad(bytes.str(), 20)
           << pad(level, 10) << pad(job, 11)
           << (a.needs_shared_memory ? pad(op, 25) + "one address space"
               : a.needs_two_levels  ? pad(op, 25) + "two levels"
                                     : op)
           << '\n';
    }
    std::lock_guard lk(lock_);
    for (const auto& [c, a] : forced_) os << "forced: " << c << " = " << a << '\n';
}

void selection::validate(std::string_view collective, std::string_view algorithm) {
    if (find(collective, algorithm)) return;
    std::string known;
    for (const auto& a : registry::every_algorithm)
        if (a.collective == collective) known += (known.empty() ? "" : ", ") + std::string(a.name);
    if (known.empty())
        throw usage_error("unknown collective \"" + std::string(collective) +
                          "\" (broadcast, reduce, allreduce, barrier, gather, allgather, scatter, alltoall, "
                          "scan, exscan, reduce_scatter, put_get)");
    throw usage_error("unknown " + std::string(collective) + " algorithm \"" + std::string(algorithm) +
                      "\" (known: " + known + ")");
}

std::map<std::string, std::string, std::less<>> selection::from_environment() {
    auto spec = csp::config::text("CSP_COLLECTIVES");
    return spec ? parse_overrides(*spec) : std::map<std::string, std::string, std::less<>>{};
}

}  // namespace csp::collectives
