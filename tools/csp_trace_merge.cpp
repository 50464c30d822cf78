// csp-trace-merge: joins the timelines a job's nodes wrote into one.
//
//   csp-trace-merge OUT FILE...
//
// For jobs started by another launcher (srun, mpiexec) with CSP_TRACE set
// per node; csp-launch --trace does the same by itself. See
// csp/model/timeline_merge.hpp for what the merged file holds.
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "csp/model/timeline_merge.hpp"

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: csp-trace-merge OUT FILE...\n");
        return 2;
    }
    try {
        const std::vector<std::string> parts(argv + 2, argv + argc);
        std::ofstream out(argv[1]);
        if (!out) throw std::runtime_error(std::string("cannot write ") + argv[1]);
        const auto m = csp::model::merge_timelines(parts, out);
        std::printf("%zu nodes, %zu messages joined, %zu ends without their other end, in %s\n", m.nodes, m.messages,
                    m.unmatched, argv[1]);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "csp-trace-merge: %s\n", e.what());
        return 1;
    }
}
