// An iterative fit that allreduces an error vector every step, the shape of
// Aspen's chemistry code (its Figure 3): each rank owns part of the data,
// computes its contribution to the gradient, and the allreduce gives every
// rank the same update.
//
//   ./build/tools/csp-launch -n 4 ./build/examples/fit_loop   # 4 OS processes
//   ./build/examples/fit_loop [ranks] [steps]                 # ranks as fibers
//   ./build/examples/fit_loop 4 --trace fit.json              # model_flags.hpp
//
// Fits y = a x^2 + b x + c to samples of 0.5 x^2 - 2 x + 1 spread over the
// ranks, by gradient descent. Exits 1 if it does not recover the
// coefficients (with fewer steps than the default: if the error did not
// fall).
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "arguments.hpp"
#include "ranks.hpp"

int main(int argc, char** argv) try {
    auto flags = examples::model_flags::take(argc, argv);
    examples::at_most(argc, argv, 2, "[ranks] [steps]");
    const int local_ranks = examples::number_at(argc, argv, 1, "the number of ranks", 4, 0);
    constexpr int samples = 4000, full_steps = 3000;
    const int steps = examples::number_at(argc, argv, 2, "the number of steps", full_steps, 1);
    constexpr double rate = 0.5;
    bool right = true;
    examples::run_ranks(local_ranks, flags, "fit_loop", [&](auto& comm) {
        // This rank's samples: every size()-th x in [-1, 1].
        std::vector<double> xs, ys;
        for (int i = comm.rank(); i < samples; i += comm.size()) {
            const double x = -1.0 + 2.0 * i / (samples - 1);
            xs.push_back(x);
            ys.push_back(0.5 * x * x - 2.0 * x + 1.0);
        }
        std::vector<double> coef{0.0, 0.0, 0.0};  // a, b, c
        double error = 0.0, first_error = -1.0;
        for (int step = 0; step < steps; ++step) {
            // [d/da, d/db, d/dc, squared error] summed over this rank's samples
            std::vector<double> local(4, 0.0);
            for (std::size_t i = 0; i < xs.size(); ++i) {
                const double x = xs[i];
                const double r = coef[0] * x * x + coef[1] * x + coef[2] - ys[i];
                local[0] += r * x * x, local[1] += r * x, local[2] += r, local[3] += r * r;
            }
            const auto total = csp::collectives::allreduce(comm, local, csp::collectives::sum{});
            for (int k = 0; k < 3; ++k)
                coef[static_cast<std::size_t>(k)] -= rate * total[static_cast<std::size_t>(k)] / samples;
            error = total[3] / samples;
            if (first_error < 0) first_error = error;
        }
        // A full run recovers the coefficients; a short one (for a small
        // model) must at least have reduced the error.
        const bool recovered =
            std::abs(coef[0] - 0.5) <= 1e-3 && std::abs(coef[1] + 2.0) <= 1e-3 && std::abs(coef[2] - 1.0) <= 1e-3;
        if (steps >= full_steps ? !recovered : !(error < first_error || steps < 2)) right = false;
        if (comm.rank() == 0)
            std::printf("fit after %d allreduce steps on %d ranks: a = %.4f, b = %.4f, c = %.4f (mean squared "
                        "error %.2e)\n",
                        steps, comm.size(), coef[0], coef[1], coef[2], error);
    });
    return right ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "fit_loop: %s\n", e.what());
    return 1;
}
