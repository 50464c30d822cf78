#include "csp/model/dot.hpp"


namespace csp::model {

namespace {
// A DOT string: quotes and backslashes escaped, control characters (a
// newline would end the statement) as spaces.
std::string quoted(const std::string& s) {
    std::string out = "\"";
    for (char c : comment_text(s)) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + '"';
}
}  // namespace

void write_dot(std::ostream& os, const network& recorded, const std::string& title) {
    const network net = program_view(recorded);
    const auto [writers, readers] = ends_of(net);

    os << "digraph " << quoted(title) << " {\n  rankdir=LR;\n  node [shape=box, style=rounded];\n";
    for (std::size_t p = 0; p < net.processes.size(); ++p)
        os << "  p" << p << " [label=" << quoted(net.processes[p].name) << "];\n";
    for (std::size_t p = 0; p < net.processes.size(); ++p)
        for (const auto& s : net.processes[p].body)
            for (std::size_t c : s.children) os << "  p" << p << " -> p" << c << " [style=dotted, color=grey];\n";
    for (std::size_t c = 0; c < net.channels.size(); ++c)
        for (std::size_t w : writers[c])
            for (std::size_t r : readers[c])
                os << "  p" << w << " -> p" << r << " [label=" << quoted(net.channels[c].name)
                   << (net.channels[c].capacity ? ", style=dashed" : "") << "];\n";
    // A barrier: a node of its own, joined to each member.
    const auto members = members_of(net);
    for (std::size_t b = 0; b < net.barriers.size(); ++b) {
        os << "  b" << b << " [label=" << quoted(net.barriers[b].name) << ", shape=octagon, style=solid];\n";
        for (std::size_t p : members[b]) os << "  p" << p << " -> b" << b << " [dir=none, style=bold];\n";
    }
    os << "}\n";
}

}  // namespace csp::model
