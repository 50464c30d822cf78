// One rank of the 2-D halo-exchange benchmark (bench/halo2d_vs_mpi): the
// ranks on a periodic grid (balanced_dims: 2 x 2 for 4 ranks, 2 x 1 for 2,
// where a rank is its own left and right neighbour), each holding a tile of T x T doubles
// between ghost rows and columns, exchanging its two edge rows and its two
// edge columns with its four neighbours `exchanges` times per pass, through
// one persistent neighbour_exchange over the tile (collectives/
// neighbours.hpp): rows as rows, columns as strided parts, gathered into
// and scattered from the exchange's staging buffers. Rank 0 prints one
// JSON line per pass:
//   {"pass", "ranks", "tile", "exchanges", "us_per_exchange"}
// and every exchange checks that each ghost holds its neighbour's edge.
//
//   csp-launch -n 4 ./build/bench/halo2d_rank T EXCHANGES PASSES
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "collectives/collectives.hpp"
#include "collectives/net_communicator.hpp"
#include "csp/runtime.hpp"
#include "net/net.hpp"

namespace cc = csp::collectives;

namespace {

// The value edge `side` (0 top, 1 bottom, 2 left, 3 right) of `rank`
// carries in exchange e, at the middle of the edge.
double mark(int rank, std::size_t side, int e) { return rank * 1e6 + e * 10.0 + static_cast<double>(side); }

}  // namespace

int main(int argc, char** argv) {
    const std::size_t n = argc > 1 ? std::stoul(argv[1]) : 256;
    const int exchanges = argc > 2 ? std::stoi(argv[2]) : 1000;
    const int passes = argc > 3 ? std::stoi(argv[3]) : 5;
    int status = 0;
    csp::run([&] {
        csp::net::node self;
        cc::net_communicator comm(self);
        const int rank = comm.rank();
        const cc::cartesian grid(cc::balanced_dims(comm.size(), 2), {true, true});
        const auto nbs = grid.neighbours(rank);  // up, down, left, right
        const std::size_t w = n + 2, m = n / 2 + 1;
        std::vector<double> t((n + 2) * w, 0.0);
        // Where each edge's mark is sent from, and where each ghost's lands.
        const std::size_t edge_at[4] = {w + m, n * w + m, m * w + 1, m * w + n};
        const std::size_t ghost_at[4] = {m, (n + 1) * w + m, m * w, m * w + n + 1};
        auto halo = cc::make_neighbour_exchange(
            comm, nbs, t,
            {cc::row{w + 1, n}, cc::row{n * w + 1, n}, cc::strided{w + 1, n, 1, w}, cc::strided{w + n, n, 1, w}},
            {cc::row{1, n}, cc::row{(n + 1) * w + 1, n}, cc::strided{w, n, 1, w}, cc::strided{w + n + 1, n, 1, w}},
            cc::stream{1});
        for (int pass = 0; pass < passes; ++pass) {
            cc::barrier(comm);
            const auto start = std::chrono::steady_clock::now();
            for (int e = 0; e < exchanges; ++e) {
                for (std::size_t side = 0; side < 4; ++side) t[edge_at[side]] = mark(rank, side, e);
                halo.exchange();
                for (std::size_t side = 0; side < 4; ++side)
                    if (t[ghost_at[side]] != mark(nbs[side], side ^ 1, e)) status = 1;
            }
            cc::barrier(comm);
            const double us =
                std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / exchanges;
            if (rank == 0)
                std::printf("{\"pass\":%d,\"ranks\":%d,\"tile\":%zu,\"exchanges\":%d,\"us_per_exchange\":%.3f}\n",
                            pass, comm.size(), n, exchanges, us);
        }
        std::fflush(stdout);
        if (cc::allreduce(comm, status, cc::maximum{}) != 0 && rank == 0)
            std::fprintf(stderr, "halo2d_rank: WRONG ghosts\n");
    });
    return status;
}
