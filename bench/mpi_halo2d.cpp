// The 2-D halo exchange of bench/halo2d_rank.cpp in plain MPI: a periodic
// Cartesian communicator (MPI_Dims_create: 2 x 2 for 4 ranks, 2 x 1 for 2), columns as an MPI_Type_vector, two ways,
// each pass alternating: four MPI_Sendrecv (one per direction), and
// persistent requests (MPI_Send_init / MPI_Recv_init once, MPI_Startall +
// MPI_Waitall each exchange). Rank 0 prints one JSON line per pass and
// variant:
//   {"pass", "variant": "sendrecv"|"persistent", "ranks", "tile", "exchanges", "us_per_exchange"}
//
//   mpirun -n 4 ./mpi_halo2d T EXCHANGES PASSES
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

double mark(int rank, int side, int e) { return rank * 1e6 + e * 10.0 + side; }

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    const int n = argc > 1 ? std::stoi(argv[1]) : 256;
    const int exchanges = argc > 2 ? std::stoi(argv[2]) : 1000;
    const int passes = argc > 3 ? std::stoi(argv[3]) : 5;
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm cart;
    int dims[2] = {0, 0};
    const int periods[2] = {1, 1};
    MPI_Dims_create(size, 2, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    int rank, nbs[4];
    MPI_Comm_rank(cart, &rank);
    MPI_Cart_shift(cart, 0, 1, &nbs[0], &nbs[1]);  // up, down
    MPI_Cart_shift(cart, 1, 1, &nbs[2], &nbs[3]);  // left, right
    const int w = n + 2, m = n / 2 + 1;
    std::vector<double> t(static_cast<std::size_t>((n + 2) * w), 0.0);
    MPI_Datatype row, column;
    MPI_Type_contiguous(n, MPI_DOUBLE, &row);
    MPI_Type_vector(n, 1, w, MPI_DOUBLE, &column);
    MPI_Type_commit(&row);
    MPI_Type_commit(&column);
    // Edge i goes to neighbour i with tag i; ghost i comes from neighbour i
    // with tag i ^ 1 (its opposite edge).
    const int edge_at[4] = {w + 1, n * w + 1, w + 1, w + n};
    const int ghost_at[4] = {1, (n + 1) * w + 1, w, w + n + 1};
    const MPI_Datatype type[4] = {row, row, column, column};
    const int mark_at[4] = {w + m, n * w + m, m * w + 1, m * w + n};
    const int mark_in[4] = {m, (n + 1) * w + m, m * w, m * w + n + 1};
    int wrong = 0;
    auto check = [&](int e) {
        for (int side = 0; side < 4; ++side)
            if (t[static_cast<std::size_t>(mark_in[side])] != mark(nbs[side], side ^ 1, e)) wrong = 1;
    };

    MPI_Request persistent[8];
    for (int i = 0; i < 4; ++i) {
        MPI_Send_init(&t[static_cast<std::size_t>(edge_at[i])], 1, type[i], nbs[i], i, cart, &persistent[i]);
        MPI_Recv_init(&t[static_cast<std::size_t>(ghost_at[i])], 1, type[i], nbs[i], i ^ 1, cart, &persistent[4 + i]);
    }
    for (int pass = 0; pass < passes; ++pass) {
        for (const char* variant : {"sendrecv", "persistent"}) {
            const bool sr = std::string(variant) == "sendrecv";
            MPI_Barrier(cart);
            const double start = MPI_Wtime();
            for (int e = 0; e < exchanges; ++e) {
                for (int side = 0; side < 4; ++side) t[static_cast<std::size_t>(mark_at[side])] = mark(rank, side, e);
                if (sr) {
                    // Edge i to neighbour i, ghost i ^ 1 from neighbour i ^ 1.
                    for (int i = 0; i < 4; ++i)
                        MPI_Sendrecv(&t[static_cast<std::size_t>(edge_at[i])], 1, type[i], nbs[i], i,
                                     &t[static_cast<std::size_t>(ghost_at[i ^ 1])], 1, type[i], nbs[i ^ 1], i, cart,
                                     MPI_STATUS_IGNORE);
                } else {
                    MPI_Startall(8, persistent);
                    MPI_Waitall(8, persistent, MPI_STATUSES_IGNORE);
                }
                check(e);
            }
            MPI_Barrier(cart);
            const double us = (MPI_Wtime() - start) * 1e6 / exchanges;
            if (rank == 0)
                std::printf("{\"pass\":%d,\"variant\":\"%s\",\"ranks\":%d,\"tile\":%d,\"exchanges\":%d,"
                            "\"us_per_exchange\":%.3f}\n",
                            pass, variant, size, n, exchanges, us);
        }
    }
    std::fflush(stdout);
    for (auto& r : persistent) MPI_Request_free(&r);
    MPI_Type_free(&row);
    MPI_Type_free(&column);
    int any_wrong = 0;
    MPI_Allreduce(&wrong, &any_wrong, 1, MPI_INT, MPI_MAX, cart);
    if (any_wrong && rank == 0) std::fprintf(stderr, "mpi_halo2d: WRONG ghosts\n");
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return any_wrong;
}
