// The Jacobi relaxation of examples/jacobi.cpp in plain MPI: the outside peer
// of bench/jacobi_vs_mpi. Same bands, same arithmetic (jacobi_kernel.hpp),
// same JSON lines:
//
//   bsp       MPI_Sendrecv of both halo rows, then relax the band
//   overlap   MPI_Isend/MPI_Irecv of the halos, relax the rows that need
//             none, MPI_Waitall, relax the two edge rows
//   ideal     bsp without communication
//
//   mpirun -n 4 ./mpi_jacobi [variant|all] [rows per rank] [columns] [steps] [--repeat N]
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../examples/jacobi_kernel.hpp"

using examples::jacobi::relax;
using examples::jacobi::top_boundary;

namespace {

double run(const std::string& variant, int rows, int cols, int steps) {
    int r, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    const int h = rows, w = cols;
    std::vector<double> cur(static_cast<std::size_t>(h + 2) * w, 0.0), next(cur.size(), 0.0);
    auto row = [w](std::vector<double>& g, int i) { return g.data() + static_cast<std::ptrdiff_t>(i) * w; };
    if (r == 0) std::fill(row(cur, 0), row(cur, 1), top_boundary), std::fill(row(next, 0), row(next, 1), top_boundary);
    const int up = r > 0 ? r - 1 : MPI_PROC_NULL, down = r < p - 1 ? r + 1 : MPI_PROC_NULL;
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int s = 0; s < steps; ++s) {
        if (variant == "bsp") {
            MPI_Sendrecv(row(cur, 1), w, MPI_DOUBLE, up, 0, row(cur, h + 1), w, MPI_DOUBLE, down, 0, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            MPI_Sendrecv(row(cur, h), w, MPI_DOUBLE, down, 1, row(cur, 0), w, MPI_DOUBLE, up, 1, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            relax(row(cur, 0), row(cur, 1), row(cur, h + 1), row(next, 1), h, w);
        } else if (variant == "overlap" && h >= 3) {
            MPI_Request q[4];
            MPI_Irecv(row(cur, 0), w, MPI_DOUBLE, up, 1, MPI_COMM_WORLD, &q[0]);
            MPI_Irecv(row(cur, h + 1), w, MPI_DOUBLE, down, 0, MPI_COMM_WORLD, &q[1]);
            MPI_Isend(row(cur, 1), w, MPI_DOUBLE, up, 0, MPI_COMM_WORLD, &q[2]);
            MPI_Isend(row(cur, h), w, MPI_DOUBLE, down, 1, MPI_COMM_WORLD, &q[3]);
            relax(row(cur, 1), row(cur, 2), row(cur, h), row(next, 2), h - 2, w);
            MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
            relax(row(cur, 0), row(cur, 1), row(cur, 2), row(next, 1), 1, w);
            relax(row(cur, h - 1), row(cur, h), row(cur, h + 1), row(next, h), 1, w);
        } else {
            relax(row(cur, 0), row(cur, 1), row(cur, h + 1), row(next, 1), h, w);
        }
        std::swap(cur, next);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double ms = (MPI_Wtime() - t0) * 1000.0, slowest = 0;
    MPI_Allreduce(&ms, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    std::vector<std::string> pos;
    int repeat = 1;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
        else pos.push_back(a);
    }
    const std::string which = pos.size() > 0 ? pos[0] : "all";
    const int rows = pos.size() > 1 ? std::atoi(pos[1].c_str()) : 256;
    const int cols = pos.size() > 2 ? std::atoi(pos[2].c_str()) : 1024;
    const int steps = pos.size() > 3 ? std::atoi(pos[3].c_str()) : 100;
    const std::vector<std::string> variants =
        which == "all" ? std::vector<std::string>{"bsp", "overlap", "ideal"} : std::vector<std::string>{which};
    int r, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    for (int pass = 0; pass < repeat; ++pass)
        for (const auto& v : variants) {
            const double ms = run(v, rows, cols, steps);
            if (r == 0)
                std::printf(
                    "{\"variant\":\"%s\",\"pass\":%d,\"ranks\":%d,\"rows_per_rank\":%d,\"cols\":%d,\"steps\":%d,"
                    "\"ms\":%.3f,\"us_per_step\":%.2f}\n",
                    v.c_str(), pass, p, rows, cols, steps, ms, 1000.0 * ms / std::max(1, steps));
        }
    MPI_Finalize();
    return 0;
}
