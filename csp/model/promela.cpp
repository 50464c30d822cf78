#include "csp/model/promela.hpp"

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
    os << "/* " << comment_text(title) << ": exported by csp::model.\n";
    for (const auto& n : net.notes) os << "   Note: " << comment_text(n) << ".\n";
    os << "   Verify: spin -a FILE && gcc -O2 -DSAFETY -o pan pan.c && ./pan\n"
          "   A deadlock shows as an invalid end state. */\n\n";
    if (folded.n > 0)
        os << "/* The pass count of the folded loops, as recorded: set N >= 1 for another run length. */\n#define N "
           << folded.n << "\n\n";
    for (const auto& ch : net.channels) os << "chan " << ch.name << " = [" << ch.capacity << "] of { byte };\n";
    for (std::size_t p = 0; p < net.processes.size(); ++p) {
        std::size_t k = 0;
        for (const auto& s : net.processes[p].body)
            if (s.what == step::kind::par)
                os << "chan " << done_name(p, k++) << " = [" << std::max<std::size_t>(1, s.children.size())
                   << "] of { bit };\n";
    }
    os << '\n';

    for (std::size_t p = 0; p < net.processes.size(); ++p) {
        const auto& proc = net.processes[p];
        const auto& runs = folded.runs[p];
        os << "proctype " << proc_name(net, p) << "() {\n";
        if (proc.alternation_recorded_as_taken)
            os << "    /* alternation: only the branch taken in the recorded run */\n";
        for (std::size_t r = 0; r < runs.size(); ++r)
            if (runs[r].times > 1) os << "    int n" << r << ";\n";
        std::size_t pars = 0;
        auto write_steps = [&](std::size_t b, std::size_t e, const char* indent) {
            for (std::size_t i = b; i < e; ++i) {
                const step& s = proc.body[i];
                if (s.what == step::kind::communicate) {
                    os << indent << net.channels[s.channel].name << (s.dir == direction::send ? "!0" : "?_") << ";\n";
                    continue;
                }
                for (std::size_t c : s.children) os << indent << "run " << proc_name(net, c) << "();\n";
                for (std::size_t j = 0; j < s.children.size(); ++j) os << indent << done_name(p, pars) << "?_;\n";
                ++pars;
            }
        };
        for (std::size_t r = 0; r < runs.size(); ++r) {
            if (runs[r].times == 1) {
                write_steps(runs[r].begin, runs[r].end, "    ");
                continue;
            }
            // A folded loop holds no par: every par starts new processes.
            os << "    n" << r << " = " << count_text(runs[r].times, folded.n) << ";\n    do\n    :: n" << r
               << " > 0 ->\n";
            write_steps(runs[r].begin, runs[r].end, "        ");
            os << "        n" << r << "--\n    :: else -> break\n    od;\n";
        }
        if (!report[p].empty()) os << "    " << report[p] << "!1;\n";
        os << "    skip\n}\n\n";
    }
    const auto started = started_by_par(net);
    os << "init {\n";
    for (std::size_t p = 0; p < net.processes.size(); ++p)
        if (!started[p]) os << "    run " << proc_name(net, p) << "();\n";
    os << "}\n";
}

}  // namespace csp::model
