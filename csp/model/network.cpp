#include "csp/model/network.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <stdexcept>
#include <string>

namespace csp::model {

std::size_t network::add_channel(std::string name, std::size_t capacity) {
    channels.push_back({std::move(name), capacity});
    return channels.size() - 1;
}

std::size_t network::add_barrier(std::string name) {
    barriers.push_back({std::move(name)});
    return barriers.size() - 1;
}

std::size_t network::add_process(std::string name) {
    processes.push_back({std::move(name), {}, {}, false, false});
    return processes.size() - 1;
}

void network::send(std::size_t p, std::size_t c) {
    processes.at(p).body.push_back({step::kind::communicate, c, direction::send, {}});
}

void network::receive(std::size_t p, std::size_t c) {
    processes.at(p).body.push_back({step::kind::communicate, c, direction::receive, {}});
}

void network::par(std::size_t p, std::vector<std::size_t> children) {
    processes.at(p).body.push_back({step::kind::par, 0, direction::send, std::move(children)});
}

void network::sync(std::size_t p, std::size_t b) {
    if (b >= barriers.size()) throw std::out_of_range("network::sync: no barrier " + std::to_string(b));
    processes.at(p).body.push_back({step::kind::sync, 0, direction::send, {}, b});
}

void network::choice(std::size_t p, std::vector<offer> offered, std::size_t taken) {
    auto& proc = processes.at(p);
    const offer t = offered.at(taken);
    proc.offers[proc.body.size()] = std::move(offered);
    proc.body.push_back({step::kind::choice, t.channel, t.dir, {}});
}

std::size_t network::count(std::size_t c, direction d) const {
    std::size_t n = 0;
    for (const auto& p : processes)
        for (const auto& s : p.body) n += s.communicates() && s.channel == c && s.dir == d;
    return n;
}

std::string identifier(const std::string& prefix, std::size_t index, const std::string& label) {
    constexpr std::size_t max_length = 48;
    std::string out = prefix + std::to_string(index);
    if (!label.empty()) out += '_';
    for (char c : label) {
        if (out.size() >= max_length) break;
        out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    }
    return out;
}

std::string comment_text(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) c = ' ';
        if (c == '/' && !out.empty() && out.back() == '*') out += ' ';
        out += c;
    }
    return out;
}

channel_ends ends_of(const network& net, const std::vector<bool>& included) {
    channel_ends e{std::vector<std::set<std::size_t>>(net.channels.size()),
                   std::vector<std::set<std::size_t>>(net.channels.size())};
    for (std::size_t p = 0; p < net.processes.size(); ++p) {
        if (!included.empty() && !included[p]) continue;
        for (const auto& s : net.processes[p].body)
            if (s.communicates()) (s.dir == direction::send ? e.writers : e.readers).at(s.channel).insert(p);
        // An end offered and never taken is an end too: its partners must
        // offer to it (and synchronise with it) in a model that may take it.
        for (const auto& [at, offered] : net.processes[p].offers)
            for (const offer& o : offered) (o.dir == direction::send ? e.writers : e.readers).at(o.channel).insert(p);
    }
    return e;
}

std::vector<std::set<std::size_t>> members_of(const network& net, const std::vector<bool>& included) {
    std::vector<std::set<std::size_t>> members(net.barriers.size());
    for (std::size_t p = 0; p < net.processes.size(); ++p) {
        if (!included.empty() && !included[p]) continue;
        for (const auto& s : net.processes[p].body)
            if (s.what == step::kind::sync) members.at(s.barrier).insert(p);
    }
    return members;
}

network program_view(const network& net) {
    if (net.processes.empty()) return net;
    std::vector<bool> service_channel(net.channels.size(), false);
    std::vector<bool> service_barrier(net.barriers.size(), false);
    for (const auto& p : net.processes)
        if (p.daemon)
            for (const auto& s : p.body) {
                if (s.communicates()) service_channel.at(s.channel) = true;
                if (s.what == step::kind::sync) service_barrier.at(s.barrier) = true;
            }

    network out;
    std::vector<std::size_t> channel_at(net.channels.size(), SIZE_MAX);
    std::string hidden;
    std::set<std::string> hidden_names;
    for (std::size_t c = 0; c < net.channels.size(); ++c) {
        if (service_channel[c]) {
            hidden += (hidden.empty() ? "" : ", ") + net.channels[c].name;
            hidden_names.insert(net.channels[c].name);
            continue;
        }
        channel_at[c] = out.add_channel(net.channels[c].name, net.channels[c].capacity);
    }
    std::string hidden_barriers;
    std::vector<std::size_t> barrier_at(net.barriers.size(), SIZE_MAX);
    for (std::size_t b = 0; b < net.barriers.size(); ++b) {
        if (service_barrier[b]) {
            hidden_barriers += (hidden_barriers.empty() ? "" : ", ") + net.barriers[b].name;
            continue;
        }
        barrier_at[b] = out.add_barrier(net.barriers[b].name);
    }
    // A note about a channel left out ("c3 overwrites when full") goes with it.
    for (const auto& note : net.notes)
        if (!hidden_names.count(note.substr(0, note.find(' ')))) out.notes.push_back(note);
    // processes[0] is kept even if it is a daemon: it is where the network starts.
    std::vector<std::size_t> process_at(net.processes.size(), SIZE_MAX);
    std::size_t daemons = 0;
    for (std::size_t p = 0; p < net.processes.size(); ++p) {
        if (p != 0 && net.processes[p].daemon) {
            ++daemons;
            continue;
        }
        process_at[p] = out.processes.size();
        out.processes.push_back(
            {net.processes[p].name, {}, {}, net.processes[p].alternation_recorded_as_taken, false});
    }
    for (std::size_t p = 0; p < net.processes.size(); ++p) {
        if (process_at[p] == SIZE_MAX) continue;
        process& to = out.processes[process_at[p]];
        const process& from = net.processes[p];
        for (std::size_t i = 0; i < from.body.size(); ++i) {
            const step& s = from.body[i];
            if (s.communicates() && channel_at[s.channel] == SIZE_MAX) continue;  // the taken end is hidden
            if (s.what == step::kind::communicate) {
                to.body.push_back({s.what, channel_at[s.channel], s.dir, {}});
                continue;
            }
            if (s.what == step::kind::sync) {
                if (barrier_at[s.barrier] != SIZE_MAX)
                    to.body.push_back({s.what, 0, s.dir, {}, barrier_at[s.barrier]});
                continue;
            }
            if (s.what == step::kind::choice) {
                std::vector<offer> kept;
                std::size_t taken = 0;
                for (const offer& o : from.offers.at(i)) {
                    if (channel_at[o.channel] == SIZE_MAX) continue;
                    if (o.channel == s.channel && o.dir == s.dir) taken = kept.size();
                    kept.push_back({channel_at[o.channel], o.dir});
                }
                if (kept.size() == 1) to.body.push_back({step::kind::communicate, kept[0].channel, kept[0].dir, {}});
                else out.choice(process_at[p], std::move(kept), taken);
                continue;
            }
            step par{step::kind::par, 0, direction::send, {}};
            for (std::size_t c : s.children)
                if (process_at.at(c) != SIZE_MAX) par.children.push_back(process_at[c]);
            if (!par.children.empty()) to.body.push_back(std::move(par));
        }
    }
    if (daemons)
        out.notes.push_back(std::to_string(daemons) + " daemon processes (runtime services) are not modelled" +
                            (hidden.empty() ? std::string() : ", nor what was sent on their channels " + hidden) +
                            (hidden_barriers.empty() ? std::string() : ", nor their barriers " + hidden_barriers));
    return out;
}

std::vector<bool> started_by_par(const network& net) {
    std::vector<bool> started(net.processes.size(), false);
    for (const auto& p : net.processes)
        for (const auto& s : p.body)
            for (std::size_t c : s.children) started.at(c) = true;
    return started;
}

namespace {

// A step as a number: equal numbers for equal communications and syncs, and
// for alternations that offered the same ends whichever they took; every par
// is different from every other step (its children are new processes).
std::vector<std::int64_t> tokens_of(const process& proc) {
    const auto& body = proc.body;
    std::vector<std::int64_t> t(body.size());
    std::int64_t unique = -1;
    constexpr std::int64_t syncs = std::int64_t{1} << 49;    // above every channel's number
    constexpr std::int64_t choices = std::int64_t{1} << 50;  // above every barrier's
    std::map<std::vector<offer>, std::int64_t> offered_sets;
    for (std::size_t i = 0; i < body.size(); ++i) {
        switch (body[i].what) {
            case step::kind::communicate:
                t[i] = static_cast<std::int64_t>(body[i].channel * 2 + (body[i].dir == direction::send));
                break;
            case step::kind::choice: {
                auto offered = proc.offers.at(i);
                std::sort(offered.begin(), offered.end());
                t[i] = offered_sets.try_emplace(std::move(offered), choices + std::int64_t(offered_sets.size()))
                           .first->second;
                break;
            }
            case step::kind::sync: t[i] = syncs + static_cast<std::int64_t>(body[i].barrier); break;
            case step::kind::par: t[i] = unique--; break;
        }
    }
    return t;
}

struct repetition {
    std::size_t start = 0, period = 0, times = 0;
    std::size_t saved() const { return times > 1 ? (times - 1) * period : 0; }
};

// The best repetition of period `d` around position m of t[lo, hi).
repetition around(const std::vector<std::int64_t>& t, std::size_t lo, std::size_t hi, std::size_t m, std::size_t d) {
    // [s, e): every i in it has t[i] == t[i + d], so t[s, e + d) repeats with period d.
    std::size_t s = m, e = m;
    while (e + d < hi && t[e] == t[e + d]) ++e;
    while (s > lo && t[s - 1] == t[s - 1 + d]) --s;
    if (e == s) return {};
    return {s, d, (e - s + d) / d};
}

// The repetition saving the most steps in t[lo, hi). The period is looked
// for among the distances from a middle step to the next occurrences of the
// same step, which finds the cycle of a loop that covers the middle.
repetition best_repetition(const std::vector<std::int64_t>& t, std::size_t lo, std::size_t hi) {
    constexpr std::size_t max_period = 4096;
    constexpr std::size_t max_candidates = 48;
    repetition best;
    if (hi - lo < 4) return best;
    for (std::size_t m : {lo + (hi - lo) / 2, lo + (hi - lo) / 4, lo + 3 * (hi - lo) / 4}) {
        std::size_t tried = 0;
        for (std::size_t d = 1; d <= max_period && m + d < hi && tried < max_candidates; ++d) {
            if (t[m + d] != t[m]) continue;
            ++tried;
            const repetition r = around(t, lo, hi, m, d);
            if (r.saved() > best.saved()) best = r;
            if (best.saved() >= (hi - lo) / 2) break;  // a multiple of this period saves no more
        }
        if (best.saved() >= (hi - lo) / 2) break;  // most of the range: good enough
    }
    return best;
}

void fold_range(const std::vector<std::int64_t>& t, std::size_t lo, std::size_t hi, std::vector<run>& out) {
    constexpr std::size_t min_saving = 3;
    if (lo == hi) return;
    const repetition r = best_repetition(t, lo, hi);
    if (r.saved() < min_saving) {
        out.push_back({lo, hi, 1});
        return;
    }
    fold_range(t, lo, r.start, out);
    out.push_back({r.start, r.start + r.period, r.times});
    fold_range(t, r.start + r.period * r.times, hi, out);
}

}  // namespace

std::vector<run> fold(const process& proc) {
    std::vector<run> out;
    fold_range(tokens_of(proc), 0, proc.body.size(), out);
    return out;
}

folded_network fold_all(const network& net) {
    folded_network f;
    for (const auto& p : net.processes) {
        f.runs.push_back(fold(p));
        for (const run& r : f.runs.back())
            if (r.times > 1 && (f.n == 0 || r.times < f.n)) f.n = r.times;
    }
    return f;
}

std::vector<offer> branches_taken(const process& proc, const run& r, std::size_t position) {
    const std::size_t period = r.end - r.begin;
    std::set<offer> taken;
    for (std::size_t k = 0; k < r.times; ++k) {
        const step& s = proc.body[r.begin + k * period + position];
        taken.insert({s.channel, s.dir});
    }
    std::vector<offer> out;
    for (const offer& o : proc.offers.at(r.begin + position))
        if (taken.count(o)) out.push_back(o);
    return out;
}

std::string count_text(std::size_t times, std::size_t n) {
    constexpr std::size_t near = 1;
    if (n == 0 || times < n || times - n > near) return std::to_string(times);
    return times == n ? std::string("N") : "N + " + std::to_string(times - n);
}

}  // namespace csp::model
