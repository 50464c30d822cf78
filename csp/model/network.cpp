#include "csp/model/network.hpp"

#include <cctype>

namespace csp::model {

std::string identifier(const std::string& prefix, std::size_t index, const std::string& label) {
    std::string out = prefix + std::to_string(index);
    if (!label.empty()) out += '_';
    for (char c : label) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    return out;
}

channel_ends ends_of(const network& net, const std::vector<bool>& included) {
    channel_ends e{std::vector<std::set<std::size_t>>(net.channels.size()),
                   std::vector<std::set<std::size_t>>(net.channels.size())};
    for (std::size_t p = 0; p < net.processes.size(); ++p) {
        if (!included.empty() && !included[p]) continue;
        for (const auto& s : net.processes[p].body)
            if (s.what == step::kind::communicate)
                (s.dir == direction::send ? e.writers : e.readers).at(s.channel).insert(p);
    }
    return e;
}

}  // namespace csp::model
