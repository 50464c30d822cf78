// Pi by the midpoint rule, with one allreduce: the aggregate-functions
// example (integrate 4 / (1 + x^2) over [0, 1]).
//
//   ./build/tools/csp-launch -n 4 ./build/examples/pi [intervals]   # 4 OS processes
//   ./build/examples/pi [intervals] [ranks]                          # ranks as fibers
//   ./build/examples/pi 1000 8 --export-promela pi.pml               # model_flags.hpp
//
// Each rank sums every size()-th interval; the allreduce gives every rank
// the total. Exits 1 if the result is not pi to 1e-9.
#include <cmath>
#include <cstdio>
#include <exception>
#include <numbers>
#include <string>

#include "arguments.hpp"
#include "ranks.hpp"

int main(int argc, char** argv) try {
    auto flags = examples::model_flags::take(argc, argv);
    examples::at_most(argc, argv, 2, "[intervals] [ranks]");
    const long intervals = examples::number_at(argc, argv, 1, "the number of intervals", 10'000'000L, 1L);
    const int local_ranks = examples::number_at(argc, argv, 2, "the number of ranks", 4, 0);
    bool right = true;
    examples::run_ranks(local_ranks, flags, "pi", [&](auto& comm) {
        const double h = 1.0 / static_cast<double>(intervals);
        double part = 0.0;
        for (long i = comm.rank(); i < intervals; i += comm.size()) {
            const double x = h * (static_cast<double>(i) + 0.5);
            part += 4.0 / (1.0 + x * x);
        }
        const double pi = csp::collectives::allreduce(comm, part * h, csp::collectives::sum{});
        if (std::abs(pi - std::numbers::pi) > 1e-9) right = false;
        if (comm.rank() == 0)
            std::printf("pi = %.12f with %ld intervals on %d ranks (error %.1e)\n", pi, intervals, comm.size(),
                        std::abs(pi - std::numbers::pi));
    });
    return right ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "pi: %s\n", e.what());
    return 1;
}
