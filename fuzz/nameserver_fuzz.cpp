// The nameserver's table driven by arbitrary request lines, as its clients
// send them: no request may crash it, grow a job past its size, or leave an
// entry whose owner has gone.
//
// Input: lines; each line's first byte names the client that sends it (8
// clients), the rest is the request. A line starting with '!' ends that
// client's connection (its registrations end).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "net/nameserver_registry.hpp"

namespace nd = csp::net::detail;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    nd::registry reg;
    constexpr int clients = 8;
    int owners[clients];
    std::vector<std::pair<std::string, int>> mine[clients];
    std::size_t notes = 0;
    const std::string text(reinterpret_cast<const char*>(data), size);
    std::size_t at = 0;
    while (at < text.size()) {
        std::size_t nl = text.find('\n', at);
        if (nl == std::string::npos) nl = text.size();
        const std::string line = text.substr(at, nl - at);
        at = nl + 1;
        if (line.size() < 1 || line.size() > nd::max_line) continue;
        const int who = static_cast<unsigned char>(line[0]) % clients;
        const std::string request = line.substr(1);
        if (!request.empty() && request[0] == '!') {
            reg.remove(mine[who], &owners[who]);
            mine[who].clear();
            continue;
        }
        const auto w = nd::split_words(request);
        for (const auto& word : w)
            if (word.empty() || word.find(' ') != std::string::npos) std::abort();
        if (w.empty()) continue;
        std::string answer;
        if (w[0] == "REGISTER") {
            const std::size_t before = mine[who].size();
            answer = reg.add(w, &owners[who], [&](const std::string&) { ++notes; }, mine[who]);
            if ((answer.rfind("OK ", 0) == 0) != (mine[who].size() == before + 1)) std::abort();
        } else if (w[0] == "LIST" && w.size() == 2) {
            answer = reg.list(w[1]);
            if (answer.rfind("JOB ", 0) != 0) std::abort();
        } else if (w[0] == "LOOKUP" && w.size() >= 3) {
            try {
                (void)reg.find(w[1], std::stoi(w[2]));
            } catch (const std::exception&) {
            }
        }
    }
    for (int c = 0; c < clients; ++c) reg.remove(mine[c], &owners[c]);
    // Every registration ended: every job is forgotten.
    for (int c = 0; c < clients; ++c)
        for (const auto& [job, rank] : mine[c])
            if (reg.find(job, rank)) std::abort();
    return 0;
}
