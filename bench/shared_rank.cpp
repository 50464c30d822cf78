// This project's side of bench/shared_vs_mpi: shared reduction variables
// (collectives/shared.hpp) against the same programs with one allreduce per
// update and with the reductions fused by hand.
//
//   variance   N batches of M values, replicated; each rank sums its share
//              of each batch and of its squares, then every rank computes
//              the batch's variance (CFL's Figure 1):
//                mpi_style   two allreduces per batch
//                lazy        shared<double> s1, s2 (s1 += the rank's sum, as
//                            the others compute it): one fused reduction
//                lazy_per_element  the same with s1 += every value, as in
//                            CFL's figure (an update per value)
//                hand_fused  one allreduce of {s1, s2} per batch
//   plankton   a step of 3 modules, each updating 9 of 27 shared
//              environment values from its particles, then reading them:
//                mpi_style   27 allreduces per step
//                lazy        27 shared<double>: 3 fused reductions per step
//                hand_fused  3 allreduces of 9 values per step
//
// One line per figure, the median over runs of the slowest rank's time:
//
//   RESULT <program> <version> <ranks> <ms per run> <reductions per batch or step>
//
//   shared_rank net [N M runs [variance]]        under csp-launch: ranks are OS processes
//   shared_rank local <n> [N M runs [variance]]  ranks are processes of one runtime
//
// Every version's results are checked against the others'; a difference is
// printed as an ERROR line and the exit status is 1.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "collectives/collectives.hpp"
#include "collectives/net_communicator.hpp"
#include "collectives/shared.hpp"
#include "csp/runtime.hpp"

namespace cc = csp::collectives;
using clock_type = std::chrono::steady_clock;

namespace {

struct sizes {
    int n = 500;     // batches
    int m = 500;     // values per batch
    int runs = 7;
    int steps = 200;  // plankton steps
    int particles = 100;  // per rank and module
    bool only_variance = false;
};

double datum(int i, int j) { return std::sin(i * 0.37 + j * 0.011) * 10.0 + j * 1e-3; }

// The three variance programs; each returns the sum of the N variances.
template <class C>
double variance_mpi_style(C& comm, const std::vector<double>& a, const sizes& z) {
    const int me = comm.rank(), p = comm.size();
    double check = 0;
    for (int i = 0; i < z.n; ++i) {
        const double* row = a.data() + static_cast<std::size_t>(i) * z.m;
        double s = 0;
        for (int j = me; j < z.m; j += p) s += row[j];
        const double s1 = cc::allreduce(comm, s, cc::sum{});
        double q = 0;
        for (int j = me; j < z.m; j += p) q += row[j] * row[j];
        const double s2 = cc::allreduce(comm, q, cc::sum{});
        check += (s2 - s1 * s1 / z.m) / (z.m - 1);
    }
    return check;
}

template <class C>
double variance_lazy(C& comm, cc::shared_group& g, const std::vector<double>& a, const sizes& z) {
    const int me = comm.rank(), p = comm.size();
    double check = 0;
    cc::shared<double> s1(g), s2(g);
    for (int i = 0; i < z.n; ++i) {
        const double* row = a.data() + static_cast<std::size_t>(i) * z.m;
        s1 = cc::same(0.0);
        double s = 0;
        for (int j = me; j < z.m; j += p) s += row[j];
        s1 += s;
        s2 = cc::same(0.0);
        double q = 0;
        for (int j = me; j < z.m; j += p) q += row[j] * row[j];
        s2 += q;
        check += (s2 - s1 * s1 / z.m) / (z.m - 1);
    }
    return check;
}

template <class C>
double variance_lazy_per_element(C& comm, cc::shared_group& g, const std::vector<double>& a, const sizes& z) {
    const int me = comm.rank(), p = comm.size();
    double check = 0;
    cc::shared<double> s1(g), s2(g);
    for (int i = 0; i < z.n; ++i) {
        const double* row = a.data() + static_cast<std::size_t>(i) * z.m;
        s1 = cc::same(0.0);
        for (int j = me; j < z.m; j += p) s1 += row[j];
        s2 = cc::same(0.0);
        for (int j = me; j < z.m; j += p) s2 += row[j] * row[j];
        check += (s2 - s1 * s1 / z.m) / (z.m - 1);
    }
    return check;
}

template <class C>
double variance_hand_fused(C& comm, const std::vector<double>& a, const sizes& z) {
    const int me = comm.rank(), p = comm.size();
    double check = 0;
    for (int i = 0; i < z.n; ++i) {
        const double* row = a.data() + static_cast<std::size_t>(i) * z.m;
        std::array<double, 2> s{};
        for (int j = me; j < z.m; j += p) s[0] += row[j];
        for (int j = me; j < z.m; j += p) s[1] += row[j] * row[j];
        const auto t = cc::allreduce(comm, std::vector<double>(s.begin(), s.end()), cc::sum{});
        check += (t[1] - t[0] * t[0] / z.m) / (z.m - 1);
    }
    return check;
}

// A module's contribution to environment value k from this rank's
// particles at step t.
double uptake(int rank, int t, int k, int particles) {
    double u = 0;
    for (int p = 0; p < particles; ++p) u += std::cos(rank * 0.1 + t * 0.01 + k * 0.3 + p * 0.07) * 1e-3;
    return u;
}

template <class C>
double plankton_mpi_style(C& comm, const sizes& z) {
    std::vector<double> env(27, 1.0);
    double check = 0;
    for (int t = 0; t < z.steps; ++t)
        for (int module = 0; module < 3; ++module) {
            for (int k = module * 9; k < module * 9 + 9; ++k)
                env[k] -= cc::allreduce(comm, uptake(comm.rank(), t, k, z.particles), cc::sum{});
            for (int k = module * 9; k < module * 9 + 9; ++k) check += env[k];
        }
    return check;
}

template <class C>
double plankton_lazy(C& comm, cc::shared_group& g, const sizes& z) {
    std::vector<cc::shared<double>> env;
    env.reserve(27);
    for (int k = 0; k < 27; ++k) env.emplace_back(g, 1.0);
    double check = 0;
    for (int t = 0; t < z.steps; ++t)
        for (int module = 0; module < 3; ++module) {
            for (int k = module * 9; k < module * 9 + 9; ++k) env[k] -= uptake(comm.rank(), t, k, z.particles);
            for (int k = module * 9; k < module * 9 + 9; ++k) check += env[k];  // the first read forces all 9
        }
    return check;
}

template <class C>
double plankton_hand_fused(C& comm, const sizes& z) {
    std::vector<double> env(27, 1.0);
    double check = 0;
    for (int t = 0; t < z.steps; ++t)
        for (int module = 0; module < 3; ++module) {
            std::vector<double> u(9);
            for (int k = 0; k < 9; ++k) u[k] = uptake(comm.rank(), t, module * 9 + k, z.particles);
            u = cc::allreduce(comm, std::move(u), cc::sum{});
            for (int k = 0; k < 9; ++k) env[module * 9 + k] -= u[k];
            for (int k = module * 9; k < module * 9 + 9; ++k) check += env[k];
        }
    return check;
}

template <class C, class F>
std::pair<double, double> timed(C& comm, int runs, F program) {
    std::vector<double> ms;
    double check = 0;
    for (int r = 0; r <= runs; ++r) {
        cc::barrier(comm);
        const auto t0 = clock_type::now();
        check = program();
        const double t = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
        if (r > 0) ms.push_back(cc::allreduce(comm, t, cc::maximum{}));  // run 0 warms up
    }
    std::sort(ms.begin(), ms.end());
    return {ms[ms.size() / 2], check};
}

template <class C>
bool run_all(C& comm, const sizes& z) {
    std::vector<double> a(static_cast<std::size_t>(z.n) * z.m);
    for (int i = 0; i < z.n; ++i)
        for (int j = 0; j < z.m; ++j) a[static_cast<std::size_t>(i) * z.m + j] = datum(i, j);
    bool ok = true;
    auto report = [&](const char* program, const char* version, double ms, double per, double check, double want) {
        if (comm.rank() != 0) return;
        std::printf("RESULT %s %s %d %.3f %.2f\n", program, version, comm.size(), ms, per);
        if (std::abs(check - want) > 1e-9 * std::max(1.0, std::abs(want))) {
            std::printf("ERROR %s %s: result %.17g, mpi_style %.17g\n", program, version, check, want);
            ok = false;
        }
        std::fflush(stdout);
    };

    auto [t_mpi, c_mpi] = timed(comm, z.runs, [&] { return variance_mpi_style(comm, a, z); });
    report("variance", "mpi_style", t_mpi, 2, c_mpi, c_mpi);
    cc::shared_group g(comm);
    const auto before = g.statistics().reductions;
    auto [t_lazy, c_lazy] = timed(comm, z.runs, [&] { return variance_lazy(comm, g, a, z); });
    const double per_batch = double(g.statistics().reductions - before) / ((z.runs + 1.0) * z.n);
    report("variance", "lazy", t_lazy, per_batch, c_lazy, c_mpi);
    const auto before_e = g.statistics().reductions;
    auto [t_elem, c_elem] = timed(comm, z.runs, [&] { return variance_lazy_per_element(comm, g, a, z); });
    const double per_batch_e = double(g.statistics().reductions - before_e) / ((z.runs + 1.0) * z.n);
    report("variance", "lazy_per_element", t_elem, per_batch_e, c_elem, c_mpi);
    auto [t_hand, c_hand] = timed(comm, z.runs, [&] { return variance_hand_fused(comm, a, z); });
    report("variance", "hand_fused", t_hand, 1, c_hand, c_mpi);

    if (z.only_variance) return ok;
    auto [p_mpi, pc_mpi] = timed(comm, z.runs, [&] { return plankton_mpi_style(comm, z); });
    report("plankton", "mpi_style", p_mpi, 27, pc_mpi, pc_mpi);
    const auto before_p = g.statistics().reductions;
    auto [p_lazy, pc_lazy] = timed(comm, z.runs, [&] { return plankton_lazy(comm, g, z); });
    const double per_step = double(g.statistics().reductions - before_p) / ((z.runs + 1.0) * z.steps);
    report("plankton", "lazy", p_lazy, per_step, pc_lazy, pc_mpi);
    auto [p_hand, pc_hand] = timed(comm, z.runs, [&] { return plankton_hand_fused(comm, z); });
    report("plankton", "hand_fused", p_hand, 3, pc_hand, pc_mpi);
    return ok;
}

sizes sizes_from(int argc, char** argv, int first) {
    sizes z;
    if (argc > first) z.n = std::stoi(argv[first]);
    if (argc > first + 1) z.m = std::stoi(argv[first + 1]);
    if (argc > first + 2) z.runs = std::stoi(argv[first + 2]);
    if (argc > first + 3) z.only_variance = std::string(argv[first + 3]) == "variance";
    return z;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string where = argc > 1 ? argv[1] : "local";
    bool ok = true;
    if (where == "net") {
        const sizes z = sizes_from(argc, argv, 2);
        csp::run([&] {
            csp::net::node self;
            {
                cc::net_communicator comm(self);
                ok = run_all(comm, z);
                cc::barrier(comm);
            }
            self.close();
        });
    } else {
        const int n = argc > 2 ? std::stoi(argv[2]) : 4;
        const sizes z = sizes_from(argc, argv, 3);
        csp::run([&] {
            cc::run_local(n, [&](cc::local_communicator& comm) {
                if (!run_all(comm, z)) ok = false;
            });
        });
    }
    return ok ? 0 : 1;
}
