// OpenMPI's side of bench/shared_vs_mpi: the variance and plankton programs
// of shared_rank.cpp in plain MPI, with one MPI_Allreduce per update
// (mpi_style) and with the reductions fused by hand (hand_fused). Same data,
// same timing (median over runs of the slowest rank), same output:
//
//   RESULT <program> <version> <ranks> <ms per run> <reductions per batch or step>
//
//   mpirun -n 4 mpi_shared [N M runs [variance]]
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

int rank_, size_;
int n = 500, m = 500, runs = 7, steps = 200, particles = 100;

double datum(int i, int j) { return std::sin(i * 0.37 + j * 0.011) * 10.0 + j * 1e-3; }

double uptake(int rank, int t, int k) {
    double u = 0;
    for (int p = 0; p < particles; ++p) u += std::cos(rank * 0.1 + t * 0.01 + k * 0.3 + p * 0.07) * 1e-3;
    return u;
}

double variance(const std::vector<double>& a, bool fused) {
    double check = 0;
    for (int i = 0; i < n; ++i) {
        const double* row = a.data() + static_cast<std::size_t>(i) * m;
        double s[2] = {0, 0}, t[2];
        for (int j = rank_; j < m; j += size_) s[0] += row[j];
        if (!fused) MPI_Allreduce(&s[0], &t[0], 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        for (int j = rank_; j < m; j += size_) s[1] += row[j] * row[j];
        if (fused) MPI_Allreduce(s, t, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        else MPI_Allreduce(&s[1], &t[1], 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        check += (t[1] - t[0] * t[0] / m) / (m - 1);
    }
    return check;
}

double plankton(bool fused) {
    std::vector<double> env(27, 1.0);
    double check = 0;
    for (int t = 0; t < steps; ++t)
        for (int module = 0; module < 3; ++module) {
            double u[9], r[9];
            for (int k = 0; k < 9; ++k) {
                u[k] = uptake(rank_, t, module * 9 + k);
                if (!fused) MPI_Allreduce(&u[k], &r[k], 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            }
            if (fused) MPI_Allreduce(u, r, 9, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            for (int k = 0; k < 9; ++k) env[module * 9 + k] -= r[k];
            for (int k = module * 9; k < module * 9 + 9; ++k) check += env[k];
        }
    return check;
}

template <class F>
double timed(F program) {
    std::vector<double> ms;
    for (int r = 0; r <= runs; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        program();
        double t = (MPI_Wtime() - t0) * 1e3, slowest = 0;
        MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (r > 0) ms.push_back(slowest);
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

void report(const char* program, const char* version, double ms, int per) {
    if (rank_ == 0) std::printf("RESULT %s %s %d %.3f %d.00\n", program, version, size_, ms, per), std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    if (argc > 1) n = std::stoi(argv[1]);
    if (argc > 2) m = std::stoi(argv[2]);
    if (argc > 3) runs = std::stoi(argv[3]);
    const bool only_variance = argc > 4 && std::string(argv[4]) == "variance";
    std::vector<double> a(static_cast<std::size_t>(n) * m);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < m; ++j) a[static_cast<std::size_t>(i) * m + j] = datum(i, j);
    report("variance", "mpi_style", timed([&] { return variance(a, false); }), 2);
    report("variance", "hand_fused", timed([&] { return variance(a, true); }), 1);
    if (!only_variance) {
        report("plankton", "mpi_style", timed([] { return plankton(false); }), 27);
        report("plankton", "hand_fused", timed([] { return plankton(true); }), 3);
    }
    MPI_Finalize();
    return 0;
}
