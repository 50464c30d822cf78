#include "csp/model/promela.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace csp::model {

namespace {

std::string proc_name(const network& net, std::size_t p) { return identifier("P", p, net.processes[p].name); }
// The channel on which the children of process p's par number k report
// their end.
std::string done_name(std::size_t p, std::size_t k) { return "done_" + std::to_string(p) + "_" + std::to_string(k); }

}  // namespace

void write_promela(std::ostream& os, const network& recorded, const std::string& title) {
    if (recorded.processes.empty()) throw std::invalid_argument("write_promela: the network has no process");
    const network net = program_view(recorded);
    // Who starts whom: a child learns the channel it reports its end on.
    std::vector<std::string> report(net.processes.size());
    for (std::size_t p = 0; p < net.processes.size(); ++p) {
        std::size_t k = 0;
        for (const auto& s : net.processes[p].body)
            if (s.what == step::kind::par) {
                for (std::size_t c : s.children) report.at(c) = done_name(p, k);
                ++k;
            }
    }

    const folded_network folded = fold_all(net);
    std::ostringstream head;
    head << "/* " << comment_text(title) << ": exported by csp::model.\n";
    for (const auto& n : net.notes) head << "   Note: " << comment_text(n) << ".\n";
    std::ostringstream decls;
    if (folded.n > 0)
        decls << "/* N: the recorded pass count of the loops written against it (N or N + 1 passes). */\n#define N "
           << folded.n << "\n\n";
    for (const auto& ch : net.channels) decls << "chan " << ch.name << " = [" << ch.capacity << "] of { byte };\n";
    // A barrier: how many members have arrived in this phase, and a sense
    // that the last of them flips, which lets the others go on.
    const auto members = members_of(net);
    for (const auto& b : net.barriers)
        decls << (members[&b - net.barriers.data()].size() < 256 ? "byte " : "int ") << b.name << "_count = 0;\nbit "
              << b.name << "_sense = 0;\n";
    for (std::size_t p = 0; p < net.processes.size(); ++p) {
        std::size_t k = 0;
        for (const auto& s : net.processes[p].body)
            if (s.what == step::kind::par)
                decls << "chan " << done_name(p, k++) << " = [" << std::max<std::size_t>(1, s.children.size())
                   << "] of { bit };\n";
    }
    decls << '\n';

    std::ostringstream procs;
    bool as_taken = false;
    for (std::size_t p = 0; p < net.processes.size(); ++p) {
        const auto& proc = net.processes[p];
        const auto& runs = folded.runs[p];
        std::ostringstream text;
        bool partial = proc.alternation_recorded_as_taken;
        for (std::size_t r = 0; r < runs.size(); ++r)
            if (runs[r].times > 1) text << "    int n" << r << ";\n";
        if (std::any_of(proc.body.begin(), proc.body.end(), [](const step& s) { return s.what == step::kind::sync; }))
            text << "    bit sense;\n";
        std::size_t pars = 0;
        auto end = [&](std::size_t c, direction d) {
            return net.channels[c].name + (d == direction::send ? "!0" : "?_");
        };
        // Steps [b, e) of run `in` (a folded loop when in->times > 1).
        auto write_steps = [&](const run& in, std::size_t b, std::size_t e, const char* indent) {
            for (std::size_t i = b; i < e; ++i) {
                const step& s = proc.body[i];
                if (s.what == step::kind::communicate) {
                    text << indent << end(s.channel, s.dir) << ";\n";
                    continue;
                }
                if (s.what == step::kind::choice) {
                    // As in the CSPm: a choice where a loop shows what followed each branch.
                    const auto branches = in.times > 1 ? branches_taken(proc, in, i - in.begin)
                                                       : std::vector<offer>{{s.channel, s.dir}};
                    partial = partial || branches.size() < proc.offers.at(i).size();
                    if (branches.size() == 1) {
                        text << indent << end(branches[0].channel, branches[0].dir) << ";\n";
                        continue;
                    }
                    text << indent << "if\n";
                    for (const offer& o : branches) text << indent << ":: " << end(o.channel, o.dir) << "\n";
                    text << indent << "fi;\n";
                    continue;
                }
                if (s.what == step::kind::sync) {
                    // Arrive (the last member flips the sense), then wait
                    // for the flip: a sense-reversing barrier.
                    const std::string& b = net.barriers[s.barrier].name;
                    text << indent << "atomic { sense = " << b << "_sense; " << b << "_count++; if :: " << b
                         << "_count == " << members[s.barrier].size() << " -> " << b << "_count = 0; " << b
                         << "_sense = 1 - " << b << "_sense :: else -> skip fi };\n"
                         << indent << "(" << b << "_sense != sense);\n";
                    continue;
                }
                for (std::size_t c : s.children) text << indent << "run " << proc_name(net, c) << "();\n";
                for (std::size_t j = 0; j < s.children.size(); ++j) text << indent << done_name(p, pars) << "?_;\n";
                ++pars;
            }
        };
        for (std::size_t r = 0; r < runs.size(); ++r) {
            if (runs[r].times == 1) {
                write_steps(runs[r], runs[r].begin, runs[r].end, "    ");
                continue;
            }
            // A folded loop holds no par: every par starts new processes.
            text << "    n" << r << " = " << count_text(runs[r].times, folded.n) << ";\n    do\n    :: n" << r
                 << " > 0 ->\n";
            write_steps(runs[r], runs[r].begin, runs[r].end, "        ");
            text << "        n" << r << "--\n    :: else -> break\n    od;\n";
        }
        if (!report[p].empty()) text << "    " << report[p] << "!1;\n";
        procs << "proctype " << proc_name(net, p) << "() {\n";
        if (partial) procs << "    /* alternation: only the branch taken in the recorded run */\n";
        procs << text.str() << "    skip\n}\n\n";
        as_taken = as_taken || partial;
    }
    os << head.str();
    if (as_taken) os << "   Note: " << alternation_note << ".\n";
    os << "   Verify: spin -a FILE && gcc -O2 -DSAFETY -o pan pan.c && ./pan\n"
          "   A deadlock shows as an invalid end state. */\n\n"
       << decls.str() << procs.str();
    const auto started = started_by_par(net);
    os << "init {\n";
    for (std::size_t p = 0; p < net.processes.size(); ++p)
        if (!started[p]) os << "    run " << proc_name(net, p) << "();\n";
    os << "}\n";
}

}  // namespace csp::model
