// csp-model: record a collective for n ranks and export it as a model.
//
//   csp-model reduce_binomial_parallel 8 --export-promela reduce8.pml --export-dot reduce8.dot
//   csp-model --list
//
// The collective runs once with its ranks as processes of one runtime, its
// messages recorded rank to rank (collectives/record_local.hpp). Its structure
// depends only on the rank count, so the model is the collective's exact
// process network for that size. Root 0; Aspen's reduce takes every rank as
// participant and the even ranks as receivers.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <string>

#include "collectives/collectives.hpp"
#include "collectives/record_local.hpp"
#include "csp/model/cspm.hpp"
#include "csp/model/dot.hpp"
#include "csp/model/promela.hpp"

namespace cc = csp::collectives;
using comm = cc::local_communicator;

namespace {

const std::map<std::string, std::function<void(comm&)>>& collectives() {
    static const std::map<std::string, std::function<void(comm&)>> table{
        {"broadcast_linear", [](comm& c) { cc::broadcast_linear(c, 1, 0); }},
        {"broadcast_binomial", [](comm& c) { cc::broadcast_binomial(c, 1, 0); }},
        {"reduce_linear", [](comm& c) { cc::reduce_linear(c, 1, cc::sum{}, 0); }},
        {"reduce_binomial", [](comm& c) { cc::reduce_binomial(c, 1, cc::sum{}, 0); }},
        {"reduce_binomial_parallel", [](comm& c) { cc::reduce_binomial_parallel(c, 1, cc::sum{}, 0); }},
        {"reduce_chain", [](comm& c) { cc::reduce_chain(c, 1, cc::sum{}, 0); }},
        {"barrier_sequential", [](comm& c) { cc::barrier_sequential(c); }},
        {"barrier_linear", [](comm& c) { cc::barrier_linear(c); }},
        {"barrier_binomial", [](comm& c) { cc::barrier_binomial(c); }},
        {"allreduce_reduce_broadcast", [](comm& c) { cc::allreduce_reduce_broadcast(c, 1, cc::sum{}); }},
        {"allreduce_butterfly", [](comm& c) { cc::allreduce_butterfly(c, 1, cc::sum{}); }},
        {"gather_parallel", [](comm& c) { cc::gather_parallel(c, 1, 0); }},
        {"allgather", [](comm& c) { cc::allgather_gather_broadcast(c, 1); }},
        {"scatter_parallel",
         [](comm& c) { cc::scatter_parallel(c, std::vector<int>(c.rank() == 0 ? c.size() : 0, 1), 0); }},
        {"alltoall", [](comm& c) { cc::alltoall_parallel(c, std::vector<int>(c.size(), 1)); }},
        {"scan", [](comm& c) { cc::scan_recursive_doubling(c, 1, cc::sum{}); }},
        {"aspen_reduce",
         [](comm& c) {
             std::vector<int> P, R;
             for (int r = 0; r < c.size(); ++r) {
                 P.push_back(r);
                 if (r % 2 == 0) R.push_back(r);
             }
             cc::aspen_reduce(c, std::optional<int>(1), P, R, cc::sum{});
         }},
    };
    return table;
}

int usage(const char* why) {
    std::fprintf(stderr,
                 "csp-model: %s\nusage: csp-model COLLECTIVE RANKS [--export-cspm FILE] [--export-promela FILE] "
                 "[--export-dot FILE]\n       csp-model --list\n",
                 why);
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 2 && std::string(argv[1]) == "--list") {
        for (const auto& [name, f] : collectives()) std::printf("%s\n", name.c_str());
        return 0;
    }
    if (argc < 3) return usage("a collective and a rank count are needed");
    const auto it = collectives().find(argv[1]);
    if (it == collectives().end()) return usage(("unknown collective \"" + std::string(argv[1]) + "\" (see --list)").c_str());
    char* end = nullptr;
    const long n = std::strtol(argv[2], &end, 10);
    if (*end != '\0' || n < 1 || n > 64) return usage("RANKS must be a number from 1 to 64");
    std::map<std::string, std::string> out;
    for (int i = 3; i < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag != "--export-cspm" && flag != "--export-promela" && flag != "--export-dot")
            return usage(("unknown option " + flag).c_str());
        if (i + 1 >= argc) return usage((flag + " needs a file name").c_str());
        out[flag] = argv[i + 1];
    }
    if (out.empty()) return usage("nothing to export");

    const auto net = cc::record_local(static_cast<int>(n), it->second);
    const std::string title = it->first + " on " + std::to_string(n) + " ranks";
    for (const auto& [flag, file] : out) {
        std::ofstream os(file);
        if (!os) return usage(("cannot write " + file).c_str());
        if (flag == "--export-cspm") csp::model::write_cspm(os, net, {title, {}});
        if (flag == "--export-promela") csp::model::write_promela(os, net, title);
        if (flag == "--export-dot") csp::model::write_dot(os, net, title);
    }
    std::printf("%s: %zu processes, %zu channels\n", title.c_str(), net.processes.size(), net.channels.size());
}
