// Heat diffusion on a square plate: the README's first distributed program.
//
//   ./build/tools/csp-launch -n 4 ./build/examples/heat [n] [steps]   # 4 nodes
//   ./build/examples/heat [n] [steps]                                  # a job of one
//   ./build/tools/csp-launch -n 4 ./build/examples/heat 64 20 --forget-halo   # a deadlock, reported
//
// The plate is n x n cells, its top edge held at 100 degrees and the others
// at 0; every step each inner cell becomes the mean of its four neighbours
// (Jacobi). The rows are split over the nodes, each holding its rows plus a
// ghost row above and below: every step a node sends its first and last
// rows to the nodes above and below and receives their edge rows into its
// ghosts (a persistent neighbour exchange, no allocation per step); every
// 10 steps an allreduce of the largest change says how close to steady the
// plate is. At the end rank 0 gathers the rows and checks them, bit for
// bit, against the same steps computed on one node; it exits 1 if they
// differ.
//
// --forget-halo: the odd ranks skip their exchange, as a buggy program
// would. The even ranks then wait for rows that never come, the odd ones
// wait in the allreduce for the even ones: the job-wide detector reports
// every blocked process of every node, and csp-launch exits non-zero.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "arguments.hpp"
#include "collectives/collectives.hpp"
#include "collectives/net_communicator.hpp"
#include "csp/runtime.hpp"
#include "net/net.hpp"

namespace cc = csp::collectives;

namespace {

// One Jacobi step of `rows` rows of width n, from `in` (which has a ghost
// row before and after them) to `out` (the same shape). Returns the largest
// change. Columns 0 and n-1 are the plate's side edges, held fixed.
double step(const std::vector<double>& in, std::vector<double>& out, std::size_t rows, std::size_t n,
            std::size_t first_row, std::size_t plate_rows) {
    double change = 0;
    for (std::size_t r = 1; r <= rows; ++r) {
        const std::size_t global = first_row + r - 1;
        if (global == 0 || global == plate_rows - 1) continue;  // top and bottom edges, fixed
        const double* up = &in[(r - 1) * n];
        const double* here = &in[r * n];
        const double* down = &in[(r + 1) * n];
        double* next = &out[r * n];
        for (std::size_t c = 1; c + 1 < n; ++c) {
            next[c] = 0.25 * (up[c] + down[c] + here[c - 1] + here[c + 1]);
            change = std::max(change, std::abs(next[c] - here[c]));
        }
    }
    return change;
}

// The starting plate rows [first, first + rows), with a ghost row before and after.
std::vector<double> initial(std::size_t first, std::size_t rows, std::size_t n) {
    std::vector<double> t((rows + 2) * n, 0.0);
    for (std::size_t r = 1; r <= rows; ++r)
        if (first + r - 1 == 0) std::fill_n(&t[r * n], n, 100.0);
    return t;
}

}  // namespace

int main(int argc, char** argv) try {
    std::vector<std::string> args(argv + 1, argv + argc);
    const bool forget_halo = std::erase(args, "--forget-halo") > 0;
    examples::at_most(args, 2, "[n] [steps] [--forget-halo]");
    const std::size_t n = args.size() > 0 ? examples::number<std::size_t>(args[0], "the plate's size", 1) : 256;
    const int steps = args.size() > 1 ? examples::number<int>(args[1], "the number of steps", 0) : 200;
    bool right = true;

    csp::run([&] {
        csp::net::node self;  // rank and size from csp-launch; alone, a job of one
        cc::net_communicator comm(self);
        const int size = comm.size(), rank = comm.rank();

        // Rows split as evenly as they go: the first n % size ranks get one more.
        const std::size_t base = n / static_cast<std::size_t>(size), extra = n % static_cast<std::size_t>(size);
        const std::size_t rows = base + (static_cast<std::size_t>(rank) < extra ? 1 : 0);
        const std::size_t first = static_cast<std::size_t>(rank) * base + std::min<std::size_t>(rank, extra);

        // The ranks as a column of a 1-d grid, not periodic: the top rank has
        // no one above it (no_rank), and its exchange skips that side.
        const cc::cartesian grid({size});
        const std::vector<int> neighbours = grid.neighbours(rank);  // {above, below}

        std::vector<double> t = initial(first, rows, n), next = t;
        // One exchange over the rows of t, built once: the edge rows go out,
        // the neighbours' edge rows land in the ghost rows. It finds the rows
        // in t each step, so t may swap buffers with next after each step.
        // Its tags come from a stream of its own, apart from the allreduces'.
        auto halo = cc::make_neighbour_exchange(comm, neighbours, t, {cc::row{1 * n, n}, cc::row{rows * n, n}},
                                                {cc::row{0, n}, cc::row{(rows + 1) * n, n}}, cc::stream{1});

        double change = 0;
        for (int s = 0; s < steps; ++s) {
            if (!(forget_halo && rank % 2 == 1)) halo.exchange();
            change = step(t, next, rows, n, first, n);
            t.swap(next);
            if (s % 10 == 9) change = cc::allreduce(comm, change, cc::maximum{});
        }
        const auto& result = t;

        // Rank 0 gathers every rank's rows and checks them against one node's run.
        std::vector<double> mine(result.begin() + static_cast<long>(n),
                                 result.begin() + static_cast<long>((rows + 1) * n));
        auto all = cc::gather(comm, std::move(mine), 0);
        if (rank == 0) {
            std::vector<double> plate;
            for (auto& part : *all) plate.insert(plate.end(), part.begin(), part.end());
            std::vector<double> a = initial(0, n, n), b = a;
            for (int s = 0; s < steps; ++s) step(s % 2 == 0 ? a : b, s % 2 == 0 ? b : a, n, n, 0, n);
            const auto& ref = steps % 2 == 0 ? a : b;
            right = std::memcmp(plate.data(), &ref[n], n * n * sizeof(double)) == 0;
            double mean = 0;
            for (double v : plate) mean += v / static_cast<double>(plate.size());
            std::printf("heat: %zu x %zu plate, %d steps on %d nodes: mean %.4f degrees, last change %.3e, %s\n", n, n,
                        steps, size, mean, change, right ? "matches one node bit for bit" : "DIFFERS from one node");
        }
    });
    return right ? 0 : 1;
} catch (const std::exception& e) {
    // A failure that reached main (a deadlock report, a lost peer, a bad
    // argument) ends the program with its message and status 1, not an abort.
    std::fprintf(stderr, "heat: %s\n", e.what());
    return 1;
}
