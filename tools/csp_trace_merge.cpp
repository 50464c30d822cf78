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
    constexpr const char* usage_line = "usage: csp-trace-merge OUT FILE...\n";
    if (argc == 2 && (std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help")) {
        std::printf("%s\nJoins the timelines of a job's nodes (each written with CSP_TRACE) into OUT, one "
                    "Perfetto trace.\n",
                    usage_line);
        return 0;
    }
    // Every argument names a file; one like an option is a mistake.
    for (int i = 1; i < argc; ++i)
        if (argv[i][0] == '-') {
            std::fprintf(stderr, "csp-trace-merge: unknown option %s\n%s", argv[i], usage_line);
            return 2;
        }
    if (argc < 3) {
        std::fprintf(stderr, "csp-trace-merge: an output file and at least one timeline are needed\n%s", usage_line);
        return 2;
    }
    try {
        const std::vector<std::string> parts(argv + 2, argv + argc);
        std::ofstream out(argv[1]);
        if (!out) throw std::runtime_error(std::string("cannot write ") + argv[1]);
        const auto m = csp::model::merge_timelines(parts, out);
        out.flush();
        if (!out) throw std::runtime_error(std::string("cannot write ") + argv[1]);
        std::printf("%zu nodes, %zu messages joined, %zu ends without their other end, in %s\n", m.nodes, m.messages,
                    m.unmatched, argv[1]);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "csp-trace-merge: %s\n", e.what());
        return 1;
    }
}
