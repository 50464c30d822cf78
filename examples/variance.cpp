// CFL's variance example: N batches of M values, each rank summing its
// share of every batch and of its squares into two shared variables; the
// variance read at the end of each batch is the force point that resolves
// both sums in one reduction.
//
//   ./build/tools/csp-launch -n 4 ./build/examples/variance   # 4 OS processes
//   ./build/examples/variance [ranks] [N] [M]                 # ranks as fibers
//   ./build/examples/variance 3 4 6 --export-cspm variance.csp  # model_flags.hpp
//
// Exits 1 if a variance differs from the sequential one, or if a batch took
// other than one reduction.
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "arguments.hpp"
#include "collectives/shared.hpp"
#include "ranks.hpp"

namespace cc = csp::collectives;

namespace {
double datum(int i, int j) { return std::sin(i * 0.37 + j * 0.011) * 10.0 + j * 1e-3; }
}  // namespace

int main(int argc, char** argv) try {
    auto flags = examples::model_flags::take(argc, argv);
    examples::at_most(argc, argv, 3, "[ranks] [N] [M]");
    const int local_ranks = examples::number_at(argc, argv, 1, "the number of ranks", 4, 0);
    const int n = examples::number_at(argc, argv, 2, "n", 500, 1);
    const int m = examples::number_at(argc, argv, 3, "m", 500, 1);
    bool right = true;
    examples::run_ranks(local_ranks, flags, "variance", [&](auto& comm) {
        cc::shared_group g(comm);
        double worst = 0;
        for (int i = 0; i < n; ++i) {
            cc::shared<double> s1(g), s2(g);
            for (int j = comm.rank(); j < m; j += comm.size()) {
                s1 += datum(i, j);
                s2 += datum(i, j) * datum(i, j);
            }
            const double var = (s2 - s1 * s1 / m) / (m - 1);  // the force point

            double r1 = 0, r2 = 0;
            for (int j = 0; j < m; ++j) r1 += datum(i, j), r2 += datum(i, j) * datum(i, j);
            worst = std::max(worst, std::abs(var - (r2 - r1 * r1 / m) / (m - 1)));
        }
        const auto st = g.statistics();
        if (worst > 1e-9 || st.reductions != static_cast<std::uint64_t>(n)) right = false;
        if (comm.rank() == 0)
            std::printf("variance of %d batches of %d values on %d ranks: %llu updates at this rank in %llu "
                        "reductions (one per batch), largest error %.1e\n",
                        n, m, comm.size(), static_cast<unsigned long long>(st.updates),
                        static_cast<unsigned long long>(st.reductions), worst);
    });
    return right ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "variance: %s\n", e.what());
    return 1;
}
