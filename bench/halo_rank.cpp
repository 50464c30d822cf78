// One rank of the halo-exchange benchmark (bench/halo_vs_mpi): the rows of a
// 1-d decomposition on a non-periodic column of ranks, each exchanging its
// first and last row of `width` doubles with the ranks above and below,
// `exchanges` times per pass, through a persistent neighbour_exchange
// (collectives/neighbours.hpp): with exchange(), which sends the rows from
// the buffers themselves, or with "split" start() and finish(), which copy
// the rows into the messages (the default sends::copied: the caller may
// rewrite a row in between). Rank 0 prints one JSON line per pass:
//   {"pass", "width", "exchanges", "form", "us_per_exchange", "rows_landed",
//    "rows_received"}
// (rows_landed: the rows every rank received straight into its ghost rows
// so far, net/landing.hpp, out of rows_received; counted after the pass's
// timing)
// and checks, each exchange, that the ghosts hold the neighbours' rows.
//
//   csp-launch -n 4 ./build/bench/halo_rank WIDTH EXCHANGES PASSES [split]
#include <chrono>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "collectives/collectives.hpp"
#include "collectives/net_communicator.hpp"
#include "csp/runtime.hpp"
#include "net/net.hpp"

namespace cc = csp::collectives;

int main(int argc, char** argv) {
    const std::size_t width = argc > 1 ? std::stoul(argv[1]) : 1024;
    const int exchanges = argc > 2 ? std::stoi(argv[2]) : 1000;
    const int passes = argc > 3 ? std::stoi(argv[3]) : 5;
    const bool split = argc > 4 && std::string(argv[4]) == "split";
    int status = 0;
    csp::run([&] {
        csp::net::node self;
        cc::net_communicator comm(self);
        const int rank = comm.rank();
        const auto nbs = cc::cartesian({comm.size()}).neighbours(rank);
        std::vector<double> top(width), bottom(width), above(width), below(width);
        auto halo = cc::make_neighbour_exchange<double>(comm, nbs, {top, bottom}, {above, below}, cc::stream{1});
        for (int pass = 0; pass < passes; ++pass) {
            cc::barrier(comm);
            const auto start = std::chrono::steady_clock::now();
            for (int e = 0; e < exchanges; ++e) {
                top[0] = rank * 1e6 + e;  // what the neighbour above must see
                bottom[0] = -(rank * 1e6 + e);
                if (split) {
                    halo.start();
                    halo.finish();
                } else {
                    halo.exchange();
                }
                if ((nbs[0] != cc::no_rank && above[0] != -(nbs[0] * 1e6 + e)) ||
                    (nbs[1] != cc::no_rank && below[0] != nbs[1] * 1e6 + e))
                    status = 1;
            }
            cc::barrier(comm);
            const double us =
                std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / exchanges;
            const std::size_t landed = cc::allreduce(comm, self.stats().landed, cc::sum{});
            const std::size_t received = cc::allreduce(
                comm, static_cast<std::size_t>(exchanges) * (pass + 1) *
                          ((nbs[0] != cc::no_rank) + (nbs[1] != cc::no_rank)),
                cc::sum{});
            if (rank == 0)
                std::printf("{\"pass\":%d,\"width\":%zu,\"exchanges\":%d,\"form\":\"%s\",\"us_per_exchange\":%.3f,"
                            "\"rows_landed\":%zu,\"rows_received\":%zu}\n",
                            pass, width, exchanges, split ? "split" : "exchange", us, landed, received);
        }
        std::fflush(stdout);
        if (cc::allreduce(comm, status, cc::maximum{}) != 0 && rank == 0)
            std::fprintf(stderr, "halo_rank: WRONG ghosts\n");
    });
    return status;
}
