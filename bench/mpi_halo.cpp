// The halo exchange of bench/halo_rank.cpp in plain MPI, two ways, each
// pass alternating: MPI_Sendrecv up then down, and persistent requests
// (MPI_Send_init / MPI_Recv_init once, MPI_Startall + MPI_Waitall each
// exchange). Rank 0 prints one JSON line per pass and variant:
//   {"pass", "variant": "sendrecv"|"persistent", "width", "exchanges", "us_per_exchange"}
//
//   mpirun -n 4 ./mpi_halo WIDTH EXCHANGES PASSES
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    const int width = argc > 1 ? std::stoi(argv[1]) : 1024;
    const int exchanges = argc > 2 ? std::stoi(argv[2]) : 1000;
    const int passes = argc > 3 ? std::stoi(argv[3]) : 5;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int up = rank > 0 ? rank - 1 : MPI_PROC_NULL, down = rank + 1 < size ? rank + 1 : MPI_PROC_NULL;
    std::vector<double> top(width), bottom(width), above(width), below(width);
    int wrong = 0;
    auto check = [&](int e) {
        if ((up != MPI_PROC_NULL && above[0] != -(up * 1e6 + e)) ||
            (down != MPI_PROC_NULL && below[0] != down * 1e6 + e))
            wrong = 1;
    };

    MPI_Request persistent[4];
    MPI_Send_init(top.data(), width, MPI_DOUBLE, up, 0, MPI_COMM_WORLD, &persistent[0]);
    MPI_Send_init(bottom.data(), width, MPI_DOUBLE, down, 1, MPI_COMM_WORLD, &persistent[1]);
    MPI_Recv_init(above.data(), width, MPI_DOUBLE, up, 1, MPI_COMM_WORLD, &persistent[2]);
    MPI_Recv_init(below.data(), width, MPI_DOUBLE, down, 0, MPI_COMM_WORLD, &persistent[3]);

    for (int pass = 0; pass < passes; ++pass) {
        for (const char* variant : {"sendrecv", "persistent"}) {
            const bool sr = std::string(variant) == "sendrecv";
            MPI_Barrier(MPI_COMM_WORLD);
            const double start = MPI_Wtime();
            for (int e = 0; e < exchanges; ++e) {
                top[0] = rank * 1e6 + e;
                bottom[0] = -(rank * 1e6 + e);
                if (sr) {
                    MPI_Sendrecv(top.data(), width, MPI_DOUBLE, up, 0, below.data(), width, MPI_DOUBLE, down, 0,
                                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Sendrecv(bottom.data(), width, MPI_DOUBLE, down, 1, above.data(), width, MPI_DOUBLE, up, 1,
                                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Startall(4, persistent);
                    MPI_Waitall(4, persistent, MPI_STATUSES_IGNORE);
                }
                check(e);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            const double us = (MPI_Wtime() - start) * 1e6 / exchanges;
            if (rank == 0)
                std::printf("{\"pass\":%d,\"variant\":\"%s\",\"width\":%d,\"exchanges\":%d,\"us_per_exchange\":%.3f}\n",
                            pass, variant, width, exchanges, us);
        }
    }
    std::fflush(stdout);
    for (auto& r : persistent) MPI_Request_free(&r);
    int any_wrong = 0;
    MPI_Allreduce(&wrong, &any_wrong, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_wrong && rank == 0) std::fprintf(stderr, "mpi_halo: WRONG ghosts\n");
    MPI_Finalize();
    return any_wrong;
}
