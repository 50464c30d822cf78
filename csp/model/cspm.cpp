#include "csp/model/cspm.hpp"

#include <set>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace csp::model {

namespace {

std::string set_of(const std::set<std::size_t>& s) {
    std::ostringstream os;
    os << '{';
    bool first = true;
    for (auto x : s) os << (first ? "" : ", ") << x, first = false;
    os << '}';
    return os.str();
}

// Processes reachable from processes[0] through pars, in that order.
std::vector<bool> reachable(const network& net) {
    std::vector<bool> seen(net.processes.size(), false);
    std::vector<std::size_t> todo{0};
    seen[0] = true;
    while (!todo.empty()) {
        const std::size_t p = todo.back();
        todo.pop_back();
        for (const auto& s : net.processes[p].body)
            for (std::size_t c : s.children)
                if (!seen.at(c)) seen[c] = true, todo.push_back(c);
    }
    return seen;
}

}  // namespace

void write_cspm(std::ostream& os, const network& net, const cspm_options& options) {
    if (net.processes.empty()) throw std::invalid_argument("write_cspm: the network has no process");
    const std::size_t n = net.processes.size();
    const auto live = reachable(net);

    const auto [writers, readers] = ends_of(net, live);

    os << "-- " << options.title << ": exported by csp::model.\n";
    for (const auto& note : net.notes) os << "-- Note: " << note << ".\n";
    os << "-- Load in FDR4: refines FILE, or open it in the FDR4 GUI.\n\n";
    os << "Procs = {0.." << n - 1 << "}\n";
    os << "channel go, finish : Procs\n";
    for (std::size_t c = 0; c < net.channels.size(); ++c) {
        const auto& ch = net.channels[c];
        if (ch.capacity == 0) os << "channel " << ch.name << " : Procs.Procs\n";
        else os << "channel " << ch.name << "_in, " << ch.name << "_out : Procs\n";
    }
    os << '\n';

    // Buffers: held values h, values still to come k.
    std::vector<std::size_t> buffers;
    for (std::size_t c = 0; c < net.channels.size(); ++c) {
        const auto& ch = net.channels[c];
        if (ch.capacity == 0) continue;
        buffers.push_back(c);
        os << "BUF_" << ch.name << "(h, k) =\n"
           << "    (h < " << ch.capacity << " and k > 0) & ([] w : " << set_of(writers[c]) << " @ " << ch.name
           << "_in.w -> BUF_" << ch.name << "(h + 1, k - 1))\n"
           << "    [] h > 0 & ([] r : " << set_of(readers[c]) << " @ " << ch.name << "_out.r -> BUF_" << ch.name
           << "(h - 1, k))\n"
           << "    [] (h == 0 and k == 0) & SKIP\n";
    }
    if (!buffers.empty()) os << '\n';

    for (std::size_t p = 0; p < n; ++p) {
        if (!live[p]) continue;
        const auto& proc = net.processes[p];
        os << "-- " << proc.name << (proc.alternation_recorded_as_taken ? " (alternation: the branch taken)" : "")
           << '\n';
        // Its steps, and its alphabet: its own go/finish, its children's,
        // and its channel ends.
        std::vector<std::string> steps, parts;
        auto control = [&](std::size_t c) {
            parts.push_back("{go." + std::to_string(c) + ", finish." + std::to_string(c) + "}");
        };
        const std::string me = std::to_string(p);
        if (p != 0) steps.push_back("go." + me + " -> SKIP"), control(p);
        for (const auto& s : proc.body) {
            if (s.what == step::kind::par) {
                for (std::size_t c : s.children) steps.push_back("go." + std::to_string(c) + " -> SKIP"), control(c);
                for (std::size_t c : s.children) steps.push_back("finish." + std::to_string(c) + " -> SKIP");
                continue;
            }
            const auto& ch = net.channels[s.channel];
            const bool send = s.dir == direction::send;
            if (ch.capacity > 0) {
                const std::string event = ch.name + (send ? "_in." : "_out.") + me;
                steps.push_back(event + " -> SKIP");
                parts.push_back("{" + event + "}");
            } else {
                // c.writer.reader, offered to every process on the other side.
                const std::string others = set_of(send ? readers[s.channel] : writers[s.channel]);
                const std::string event = send ? ch.name + "." + me + ".r" : ch.name + ".w." + me;
                const std::string var = send ? "r" : "w";
                steps.push_back("([] " + var + " : " + others + " @ " + event + " -> SKIP)");
                parts.push_back("{" + event + " | " + var + " <- " + others + "}");
            }
        }
        if (p != 0) steps.push_back("finish." + me + " -> SKIP");
        os << "PROC(" << p << ") =";
        if (steps.empty()) os << " SKIP";
        for (std::size_t i = 0; i < steps.size(); ++i) os << (i ? "\n    ; " : " ") << steps[i];
        os << '\n';
        os << "ALPHA(" << p << ") = Union({";
        for (std::size_t i = 0; i < parts.size(); ++i) os << (i ? ", " : "") << parts[i];
        os << "})\n\n";
    }

    std::set<std::size_t> components;
    for (std::size_t p = 0; p < n; ++p)
        if (live[p]) components.insert(p);
    os << "PROCS = " << set_of(components) << "\n\n";
    os << "PROCESSES = || i : PROCS @ [ALPHA(i)] PROC(i)\n";
    if (buffers.empty()) {
        os << "SYSTEM = PROCESSES\n";
    } else {
        // Buffers are named one by one: CSPm sets cannot hold processes.
        os << "BUFFER_EVENTS = {|";
        for (std::size_t i = 0; i < buffers.size(); ++i)
            os << (i ? ", " : " ") << net.channels[buffers[i]].name << "_in, " << net.channels[buffers[i]].name
               << "_out";
        os << " |}\n";
        os << "ALL_BUFFERS = ";
        for (std::size_t i = 0; i < buffers.size(); ++i) {
            const auto c = buffers[i];
            os << (i ? "\n    ||| " : "") << "BUF_" << net.channels[c].name << "(0, " << net.count(c, direction::send)
               << ")";
        }
        os << "\nSYSTEM = PROCESSES [| BUFFER_EVENTS |] ALL_BUFFERS\n";
    }
    os << "\nassert SYSTEM :[deadlock free [F]]\n";
    os << "assert SYSTEM :[divergence free]\n";
    if (!options.spec.empty()) os << '\n' << options.spec << "\nassert SPEC [T= SYSTEM\n";
}

}  // namespace csp::model
