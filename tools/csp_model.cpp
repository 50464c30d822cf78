// csp-model: record a collective for n ranks and export it as a model.
//
//   csp-model reduce_binomial_parallel 8 --export-promela reduce8.pml --export-dot reduce8.dot
//   csp-model --list
//
// The collective runs once with its ranks as processes of one runtime, its
// messages recorded rank to rank (collectives/record_local.hpp). Its structure
// depends only on the rank count, so the model is the collective's exact
// process network for that size. Root 0; Aspen's reduce takes every rank as
// participant and the even ranks as receivers; shared_variance is a small
// program of shared reduction variables (two force points).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/collectives.hpp"
#include "collectives/record_local.hpp"
#include "csp/model/cspm.hpp"
#include "csp/model/dot.hpp"
#include "csp/model/promela.hpp"

namespace cc = csp::collectives;
using comm = cc::local_communicator;

namespace {

// One call of `algorithm` with small values, root 0.
template <class A>
void sample_call(A algorithm, comm& c) {
    constexpr std::string_view coll = A::info.collective;
    if constexpr (coll == "broadcast") algorithm(c, std::vector<int>(2, 1), 0);
    else if constexpr (coll == "gather") algorithm(c, 1, 0);
    else if constexpr (coll == "reduce") algorithm(c, std::vector<int>(2, 1), cc::sum{}, 0);
    else if constexpr (coll == "allreduce" || coll == "scan" || coll == "exscan")
        algorithm(c, std::vector<int>(static_cast<std::size_t>(c.size()), 1), cc::sum{});
    else if constexpr (coll == "barrier") algorithm(c);
    else if constexpr (coll == "allgather") algorithm(c, 1);
    else if constexpr (coll == "scatter") algorithm(c, std::vector<int>(c.rank() == 0 ? c.size() : 0, 1), 0);
    else if constexpr (coll == "alltoall") algorithm(c, std::vector<int>(c.size(), 1));
    else if constexpr (coll == "reduce_scatter")
        algorithm(c, std::vector<int>(c.size(), 1), std::vector<std::size_t>(c.size(), 1), cc::sum{});
    else if constexpr (coll == "put_get") algorithm(c, 1, (c.rank() + 1) % c.size());
    else static_assert(coll != coll, "csp-model: no sample call for this collective");
}

// "<collective>_<algorithm>" for every registered algorithm, and Aspen's reduce.
const std::map<std::string, std::function<void(comm&)>>& collectives() {
    static const auto table = [] {
        std::map<std::string, std::function<void(comm&)>> t;
        cc::registry::for_each_collective([&](auto list) {
            list.for_each([&](auto algorithm) {
                const auto& info = decltype(algorithm)::info;
                t[std::string(info.collective) + "_" + std::string(info.name)] = [algorithm](comm& c) {
                    sample_call(algorithm, c);
                };
            });
        });
        t["aspen_reduce"] = [](comm& c) {
            std::vector<int> P, R;
            for (int r = 0; r < c.size(); ++r) {
                P.push_back(r);
                if (r % 2 == 0) R.push_back(r);
            }
            cc::aspen_reduce(c, std::optional<int>(1), P, R, cc::sum{});
        };
        // Shared reduction variables (collectives/shared.hpp): two batches of
        // CFL's variance, two updates each, one fused reduction per batch.
        t["shared_variance"] = [](comm& c) {
            cc::shared_group g(c);
            for (int batch = 0; batch < 2; ++batch) {
                cc::shared<double> s1(g), s2(g);
                s1 += c.rank() + batch;
                s2 += (c.rank() + batch) * (c.rank() + batch);
                (void)(s2 - s1 * s1).get();
            }
        };
        return t;
    }();
    return table;
}

constexpr const char* usage_lines =
    "usage: csp-model COLLECTIVE RANKS [--export-cspm FILE] [--export-promela FILE] [--export-dot FILE]\n"
    "       csp-model --list\n";

int usage(const char* why) {
    std::fprintf(stderr, "csp-model: %s\n%s", why, usage_lines);
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 2 && (std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help")) {
        std::printf("%s\nRecords COLLECTIVE's process network on RANKS ranks and writes it as a CSPm script (FDR),\n"
                    "a Promela model (SPIN) or a DOT graph; --list names the collectives.\n",
                    usage_lines);
        return 0;
    }
    if (argc == 2 && std::string(argv[1]) == "--list") {
        for (const auto& [name, f] : collectives()) std::printf("%s\n", name.c_str());
        return 0;
    }
    if (argc < 3) return usage("a collective and a rank count are needed");
    const auto it = collectives().find(argv[1]);
    if (it == collectives().end()) {
        // "allreduce" for "allreduce_ring": name the algorithms it may mean.
        const std::string given = argv[1];
        std::string algorithms;
        for (const auto& [name, f] : collectives())
            if (name.rfind(given + "_", 0) == 0) algorithms += (algorithms.empty() ? "" : ", ") + name;
        if (!algorithms.empty())
            return usage(("\"" + given + "\" is a collective of several algorithms; name one: " + algorithms).c_str());
        return usage(("unknown collective \"" + given + "\" (see --list)").c_str());
    }
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
