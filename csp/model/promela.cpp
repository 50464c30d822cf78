#include "csp/model/promela.hpp"

#include <stdexcept>

namespace csp::model {

namespace {

std::string proc_name(const network& net, std::size_t p) { return identifier("P", p, net.processes[p].name); }
std::string chan_name(const network& net, std::size_t c) { return net.channels[c].name; }
// The channel on which the children of process p's par number k report
// their end.
std::string done_name(std::size_t p, std::size_t k) { return "done_" + std::to_string(p) + "_" + std::to_string(k); }

}  // namespace

void write_promela(std::ostream& os, const network& net, const std::string& title) {
    if (net.processes.empty()) throw std::invalid_argument("write_promela: the network has no process");
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

    os << "/* " << title << ": exported by csp::model.\n";
    for (const auto& n : net.notes) os << "   Note: " << n << ".\n";
    os << "   Verify: spin -a FILE && gcc -O2 -DSAFETY -o pan pan.c && ./pan\n"
          "   A deadlock shows as an invalid end state. */\n\n";
    for (std::size_t c = 0; c < net.channels.size(); ++c)
        os << "chan " << chan_name(net, c) << " = [" << net.channels[c].capacity << "] of { byte };\n";
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
        os << "proctype " << proc_name(net, p) << "() {\n";
        if (proc.alternation_recorded_as_taken)
            os << "    /* alternation: only the branch taken in the recorded run */\n";
        std::size_t k = 0;
        for (const auto& s : proc.body) {
            if (s.what == step::kind::communicate) {
                os << "    " << chan_name(net, s.channel) << (s.dir == direction::send ? "!0" : "?_") << ";\n";
                continue;
            }
            for (std::size_t c : s.children) os << "    run " << proc_name(net, c) << "();\n";
            for (std::size_t i = 0; i < s.children.size(); ++i) os << "    " << done_name(p, k) << "?_;\n";
            ++k;
        }
        if (!report[p].empty()) os << "    " << report[p] << "!1;\n";
        os << "    skip\n}\n\n";
    }
    os << "init {\n    run " << proc_name(net, 0) << "()\n}\n";
}

}  // namespace csp::model
