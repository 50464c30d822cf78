// OpenMPI's side of bench/collectives_vs_mpi, timed exactly like
// collectives_rank.cpp: warm-up, barrier, a back-to-back loop, the slowest
// rank's time per operation. Built by the script with mpicxx.
//   mpirun -n N mpi_collectives                    everything
//   mpirun -n N mpi_collectives allreduce8         allreduce of 8 B
//   mpirun -n N mpi_collectives allreduce <bytes> [iterations]
//   mpirun -n N mpi_collectives scan               MPI_Scan and MPI_Exscan of 8 B, 64 KiB, 1 MiB
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace {

int iterations_for(std::size_t bytes) { return bytes <= 64 ? 2000 : bytes <= 65536 ? 200 : 40; }

template <class F>
double time_per_op(int iterations, F op) {
    for (int i = 0; i < iterations / 10 + 1; ++i) op();
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iterations; ++i) op();
    double us = (MPI_Wtime() - t0) * 1e6 / iterations, slowest = 0;
    MPI_Allreduce(&us, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

void report(const char* collective, std::size_t bytes, double us) {
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) std::printf("RESULT %s mpi %d %zu %.3f\n", collective, size, bytes, us), std::fflush(stdout);
}

// MPI_Allreduce of `bytes` (doubles, summed).
void allreduce_of(std::size_t bytes, int iterations) {
    const int n = static_cast<int>(std::max<std::size_t>(bytes / sizeof(double), 1));
    std::vector<double> in(static_cast<std::size_t>(n), 1.0), out(static_cast<std::size_t>(n));
    report("allreduce", bytes, time_per_op(iterations, [&] {
               MPI_Allreduce(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
           }));
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    const bool only_allreduce_8 = argc > 1 && std::string_view(argv[1]) == "allreduce8";
    if (argc > 1 && std::string_view(argv[1]) == "scan") {
        for (std::size_t bytes : {std::size_t{8}, std::size_t{65536}, std::size_t{1} << 20}) {
            const int n = static_cast<int>(bytes / sizeof(double));
            std::vector<double> in(static_cast<std::size_t>(n), 1.0), out(static_cast<std::size_t>(n));
            // As many calls as collectives_rank's scan set makes.
            const int k = bytes <= 64 ? 20'000 : iterations_for(bytes);
            report("scan", bytes, time_per_op(k, [&] {
                       MPI_Scan(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                   }));
            report("exscan", bytes, time_per_op(k, [&] {
                       MPI_Exscan(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                   }));
        }
        MPI_Finalize();
        return 0;
    }
    if (argc > 2 && std::string_view(argv[1]) == "allreduce") {  // one size, as collectives_rank allreduce
        const std::size_t bytes = std::strtoull(argv[2], nullptr, 10);
        allreduce_of(bytes, argc > 3 ? std::atoi(argv[3]) : iterations_for(bytes));
        MPI_Finalize();
        return 0;
    }
    for (std::size_t bytes : {std::size_t{8}, std::size_t{65536}, std::size_t{1} << 20})
        if (!only_allreduce_8 || bytes == 8) allreduce_of(bytes, iterations_for(bytes));
    if (!only_allreduce_8) {
        int size;
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        // reduce_scatter, broadcast: `bytes` is the whole vector; allgather: each rank's part.
        for (std::size_t bytes : {std::size_t{65536}, std::size_t{1} << 20}) {
            const int n = static_cast<int>(bytes / sizeof(double));
            std::vector<double> in(static_cast<std::size_t>(n), 1.0), out(static_cast<std::size_t>(n) * size);
            report("reduce_scatter", bytes, time_per_op(iterations_for(bytes), [&] {
                       MPI_Reduce_scatter_block(in.data(), out.data(), n / size, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                   }));
            report("allgather", bytes, time_per_op(iterations_for(bytes), [&] {
                       MPI_Allgather(in.data(), n, MPI_DOUBLE, out.data(), n, MPI_DOUBLE, MPI_COMM_WORLD);
                   }));
            report("broadcast", bytes, time_per_op(iterations_for(bytes), [&] {
                       MPI_Bcast(in.data(), n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
                   }));
            report("reduce", bytes, time_per_op(iterations_for(bytes), [&] {
                       MPI_Reduce(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
                   }));
        }
        double in = 1.0, out = 0.0;
        const int k = iterations_for(8);
        report("reduce", 8, time_per_op(k, [&] { MPI_Reduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD); }));
        report("broadcast", 8, time_per_op(k, [&] { MPI_Bcast(&in, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); }));
        report("barrier", 0, time_per_op(k, [&] { MPI_Barrier(MPI_COMM_WORLD); }));
    }
    MPI_Finalize();
}
