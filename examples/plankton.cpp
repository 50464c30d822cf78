// A plankton-like time step, the shape of CFL's oceanography code: three
// modules (move, energy, uptake) each update 9 of 27 shared environment
// values from this rank's particles and then read them. Written with one
// reduction per update it takes 27 synchronisations per step; with shared
// variables the three reads are the force points, so 3.
//
//   ./build/tools/csp-launch -n 4 ./build/examples/plankton   # 4 OS processes
//   ./build/examples/plankton [ranks] [steps]                 # ranks as fibers
//
// Each step is checked against the same step with 27 separate allreduces.
// Exits 1 on a difference, or if a step took other than 3 reductions.
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
constexpr int layers = 27, per_module = 9, particles = 200;

// This rank's particles' effect on environment value k at step t.
double effect(int rank, int t, int k) {
    double u = 0;
    for (int p = rank; p < particles * 4; p += 4) u += std::cos(t * 0.01 + k * 0.3 + p * 0.07) * 1e-3;
    return u;
}
}  // namespace

int main(int argc, char** argv) try {
    auto flags = examples::model_flags::take(argc, argv);
    examples::at_most(argc, argv, 2, "[ranks] [steps]");
    const int local_ranks = examples::number_at(argc, argv, 1, "the number of ranks", 4, 0);
    const int steps = examples::number_at(argc, argv, 2, "the number of steps", 100, 0);
    bool right = true;
    examples::run_ranks(local_ranks, flags, "plankton", [&](auto& comm) {
        cc::shared_group g(comm);
        std::vector<cc::shared<double>> env;
        env.reserve(layers);
        for (int k = 0; k < layers; ++k) env.emplace_back(g, 1.0, "layer" + std::to_string(k));
        std::vector<double> reference(layers, 1.0);
        double worst = 0;
        for (int t = 0; t < steps; ++t) {
            for (int module = 0; module < 3; ++module) {
                for (int k = module * per_module; k < (module + 1) * per_module; ++k)
                    env[k] -= effect(comm.rank(), t, k);  // deferred
                // The module reads its layers: the first read is the force
                // point for all nine.
                for (int k = module * per_module; k < (module + 1) * per_module; ++k) {
                    reference[k] -= cc::allreduce(comm, effect(comm.rank(), t, k), cc::sum{});
                    worst = std::max(worst, std::abs(env[k].get() - reference[k]));
                }
            }
        }
        const auto st = g.statistics();
        if (worst > 1e-12 || st.reductions != static_cast<std::uint64_t>(3 * steps)) right = false;
        if (comm.rank() == 0)
            std::printf("plankton: %d steps on %d ranks, %llu updates in %llu reductions (%.0f per step; 27 "
                        "without fusion), largest difference %.1e\n",
                        steps, comm.size(), static_cast<unsigned long long>(st.updates),
                        static_cast<unsigned long long>(st.reductions), double(st.reductions) / steps, worst);
    });
    return right ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "plankton: %s\n", e.what());
    return 1;
}
