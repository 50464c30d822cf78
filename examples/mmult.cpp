// C = A x B on a q x q grid of ranks (Cannon's algorithm with panels, as in
// Thyme's MMULT): the k dimension is cut into K = q * panels panels; at step t
// rank (i, j) adds A's panel p times B's panel p to its block of C, with
// p = (t + (i + j) * panels) mod K, then passes the A panel to its left
// neighbour and the B panel to the one above, who use them `panels` steps
// later. Four versions (as in jacobi.cpp):
//
//   bsp       receive the step's panels, multiply-add, pass them on
//   overlap   receive, pass them on first, then multiply-add
//   graph     each rank's block cut into tiles x tiles tasks; a tile's A strip
//             runs along its row of tiles and on to the left rank, its B strip
//             down its column and on to the rank above, so a step is a
//             wavefront and tasks of several steps are ready at once
//   ideal     the multiply-adds alone
//
// and, for the graph, the ready-queue policy and priority metadata:
//   --queue newest (LIFO, Thyme's scheduler) or fifo (default), and
//   --priority older (older steps first) or none.
//
//   ./build/tools/csp-launch -n 4 ./build/examples/mmult                 # 2 x 2 nodes
//   ./build/examples/mmult all 128 4 2 --ranks 4                          # ranks as fibers
//
// Arguments: [variant|all|priorities] [N] [panels per block] [tiles per side];
// flags: --ranks N (a square), --no-check, --repeat N, --threads N, --workers N,
// --queue fifo|newest, --priority none|older. `priorities` runs the graph
// four ways: fifo and newest-first, each without and with older-first.
// Entries of A and B are small integers, so every order of the sums gives
// the same C; each version but ideal is compared with a sequential product
// and the program exits 1 if one differs.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "arguments.hpp"
#include "dataflow/dataflow.hpp"
#include "ranks.hpp"

namespace cc = csp::collectives;
namespace df = csp::dataflow;

namespace {

using matrix = std::vector<double>;  // row-major

double a_at(int i, int k) { return ((i * 7 + k * 3) % 7) - 3; }
double b_at(int k, int j) { return ((k * 5 + j * 11) % 5) - 2; }

// c (rows x cols, row stride ldc) += a (rows x depth) * b (depth x cols).
void multiply_add(const double* a, const double* b, double* c, int rows, int depth, int cols, int ldc) {
    for (int i = 0; i < rows; ++i)
        for (int k = 0; k < depth; ++k) {
            const double x = a[static_cast<std::ptrdiff_t>(i) * depth + k];
            const double* brow = b + static_cast<std::ptrdiff_t>(k) * cols;
            double* crow = c + static_cast<std::ptrdiff_t>(i) * ldc;
            for (int j = 0; j < cols; ++j) crow[j] += x * brow[j];
        }
}

struct config {
    std::string variant = "all";
    int n = 512;       // the matrices are n x n
    int panels = 4;    // per block of the k dimension
    int tiles = 2;     // per side of a rank's block (graph)
    int local_ranks = 4;
    bool check = true;
    int repeat = 1;
    int threads = 1;
    int workers = 0;  // graph: worker processes per rank (0: one per thread)
    std::string queue = "fifo";
    std::string priority = "none";
};

struct grid_shape {
    int q, i, j, n, nb, k;  // q x q ranks; this rank (i, j); block n x n; panel width nb; K panels
    int right() const { return i * q + (j + 1) % q; }
    int left() const { return i * q + (j + q - 1) % q; }
    int below() const { return ((i + 1) % q) * q + j; }
    int above() const { return ((i + q - 1) % q) * q + j; }
    int panel(int t) const { return (t + (i + j) * (k / q)) % k; }
};

template <class C>
grid_shape shape_of(C& comm, const config& c) {
    const int q = static_cast<int>(std::lround(std::sqrt(comm.size())));
    grid_shape s{q, comm.rank() / q, comm.rank() % q, c.n / q, c.n / (q * c.panels), q * c.panels};
    return s;
}

// Rows [r0, r0 + rows) of A's panel p at block-row i, and columns
// [c0, c0 + cols) of B's panel p at block-column j, as the initial
// distribution gives them.
matrix a_panel(const grid_shape& g, int p, int r0, int rows) {
    matrix m(static_cast<std::size_t>(rows) * g.nb);
    for (int r = 0; r < rows; ++r)
        for (int k = 0; k < g.nb; ++k)
            m[static_cast<std::size_t>(r) * g.nb + k] = a_at(g.i * g.n + r0 + r, p * g.nb + k);
    return m;
}
matrix b_panel(const grid_shape& g, int p, int c0, int cols) {
    matrix m(static_cast<std::size_t>(g.nb) * cols);
    for (int k = 0; k < g.nb; ++k)
        for (int c = 0; c < cols; ++c)
            m[static_cast<std::size_t>(k) * cols + c] = b_at(p * g.nb + k, g.j * g.n + c0 + c);
    return m;
}

struct block_result {
    matrix c;
    double ms = 0;
};

// bsp, overlap, ideal: one task per rank, whole panels.
template <class Comm>
block_result run_block(Comm& comm, const config& c, bool exchange, bool early) {
    const grid_shape g = shape_of(comm, c);
    const int lag = c.panels;
    std::vector<cc::tag> tags;
    for (int t = 0; t < g.k; ++t) tags.push_back(comm.next_tag(cc::stream{}));
    matrix out(static_cast<std::size_t>(g.n) * g.n, 0.0);
    // ideal's panels are made before the clock starts, as the others' first ones
    std::vector<matrix> own_a, own_b;
    if (!exchange)
        for (int t = 0; t < g.k; ++t)
            own_a.push_back(a_panel(g, g.panel(t), 0, g.n)), own_b.push_back(b_panel(g, g.panel(t), 0, g.n));
    std::vector<matrix> first_a, first_b;
    for (int t = 0; t < std::min(lag, g.k); ++t)
        first_a.push_back(a_panel(g, g.panel(t), 0, g.n)), first_b.push_back(b_panel(g, g.panel(t), 0, g.n));
    cc::barrier(comm);
    const auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < g.k; ++t) {
        matrix a, b;
        if (!exchange) {
            a = std::move(own_a[t]), b = std::move(own_b[t]);
        } else if (t < lag) {
            a = std::move(first_a[t]), b = std::move(first_b[t]);
        } else {
            a = comm.template receive<matrix>(g.right(), tags[t].step(0));
            b = comm.template receive<matrix>(g.below(), tags[t].step(1));
        }
        auto pass_on = [&] {
            if (!exchange || t + lag >= g.k) return;
            comm.send(g.left(), tags[t + lag].step(0), a);
            comm.send(g.above(), tags[t + lag].step(1), b);
        };
        if (early) pass_on(), csp::yield();
        multiply_add(a.data(), b.data(), out.data(), g.n, g.nb, g.n, g.n);
        if (!early) pass_on();
    }
    cc::barrier(comm);
    return {std::move(out), std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count()};
}

template <class Comm>
block_result run_graph(Comm& comm, const config& c, const std::string& queue, const std::string& priority) {
    const grid_shape g = shape_of(comm, c);
    const int tt = c.tiles, tn = g.n / tt, lag = c.panels;
    const int me = comm.rank();
    auto id = [tt](int rank, int r, int col) { return (static_cast<df::task_id>(rank) * tt + r) * tt + col; };
    auto rank_of = [tt](df::task_id t) { return static_cast<int>(t / (static_cast<df::task_id>(tt) * tt)); };
    auto shape_at = [&](int rank) {
        grid_shape s = g;
        s.i = rank / g.q, s.j = rank % g.q;
        return s;
    };
    std::vector<matrix> tiles(static_cast<std::size_t>(tt) * tt, matrix(static_cast<std::size_t>(tn) * tn, 0.0));
    std::map<std::tuple<df::task_id, std::size_t, int>, matrix> first;
    for (int t = 0; t < std::min(lag, g.k); ++t)
        for (int x = 0; x < tt; ++x) {
            first[{id(me, x, 0), 0, t}] = a_panel(g, g.panel(t), x * tn, tn);
            first[{id(me, 0, x), 1, t}] = b_panel(g, g.panel(t), x * tn, tn);
        }
    // A value is a strip: an A strip (tn x nb) on input/output 0, a B strip
    // (nb x tn) on 1.
    df::task_graph<matrix> graph{
        .tasks = static_cast<df::task_id>(g.q) * g.q * tt * tt,
        .owner = rank_of,
        .edges =
            [&](df::task_id t) {
                const int rank = rank_of(t), r = static_cast<int>(t / tt % tt), col = static_cast<int>(t % tt);
                const grid_shape s = shape_at(rank);
                df::task_edges e;
                e.inputs.push_back(col > 0 ? df::input{id(rank, r, col - 1), 0}
                                           : df::input{id(s.right(), r, tt - 1), lag});
                e.inputs.push_back(r > 0 ? df::input{id(rank, r - 1, col), 0}
                                         : df::input{id(s.below(), tt - 1, col), lag});
                e.outputs.push_back(col < tt - 1 ? df::output{id(rank, r, col + 1), 0}
                                                 : df::output{id(s.left(), r, 0), lag});
                e.outputs.push_back(r < tt - 1 ? df::output{id(rank, r + 1, col), 0}
                                               : df::output{id(s.above(), 0, col), lag});
                return e;
            },
        .body =
            [&](df::task<matrix>& t) {
                const auto local = static_cast<std::size_t>(t.id() - id(me, 0, 0));
                multiply_add(t.input(0).data(), t.input(1).data(), tiles[local].data(), tn, g.nb, tn, tn);
                t.emit(0, std::move(t.input(0)));
                t.emit(1, std::move(t.input(1)));
            },
        // The panels a rank starts with, those of its first `panels` steps,
        // made before the clock starts (as bsp's are).
        .initial =
            [&](df::task_id to, std::size_t input, int step) {
                return std::move(first.at({to, input, step}));
            },
        .name =
            [tt](df::task_id t) {
                return "tile " + std::to_string(t / (tt * tt)) + "." + std::to_string(t / tt % tt) + "." +
                       std::to_string(t % tt);
            },
    };
    if (priority == "older") graph.priority = df::older_first;
    df::run_options o{.workers = c.workers};
    if (queue == "newest") o.queue = [] { return std::make_unique<df::newest_first>(); };
    cc::barrier(comm);
    const auto t0 = std::chrono::steady_clock::now();
    df::run(comm, graph, g.k, o);
    cc::barrier(comm);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    // The block of C from its tiles.
    matrix out(static_cast<std::size_t>(g.n) * g.n);
    for (int r = 0; r < tt; ++r)
        for (int col = 0; col < tt; ++col)
            for (int x = 0; x < tn; ++x)
                std::copy_n(tiles[static_cast<std::size_t>(r) * tt + col].data() + static_cast<std::ptrdiff_t>(x) * tn,
                            tn, out.data() + (static_cast<std::ptrdiff_t>(r) * tn + x) * g.n + col * tn);
    return {std::move(out), ms};
}

config parse(int argc, char** argv) {
    constexpr std::string_view usage =
        "[bsp|overlap|graph|ideal|all|priorities] [N] [panels per block] [tiles per side] [--ranks N] [--no-check] "
        "[--repeat N] [--threads N] [--workers N] [--queue fifo|newest] [--priority none|older]";
    config c;
    std::vector<std::string> pos;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&] {
            if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
            return std::string(argv[++i]);
        };
        if (a == "--ranks") c.local_ranks = examples::number<int>(value(), "--ranks", 1);
        else if (a == "--no-check") c.check = false;
        else if (a == "--repeat") c.repeat = examples::number<int>(value(), "--repeat", 1);
        else if (a == "--threads") c.threads = examples::number<int>(value(), "--threads", 1);
        else if (a == "--workers") c.workers = examples::number<int>(value(), "--workers", 0);
        else if (a == "--queue") c.queue = value();
        else if (a == "--priority") c.priority = value();
        else if (a == "--help" || a == "-h") examples::show_usage(usage);
        else if (a.rfind("--", 0) == 0) throw std::invalid_argument("unknown flag " + a);
        else pos.push_back(a);
    }
    examples::at_most(pos, 4, usage);
    if (pos.size() > 0) c.variant = pos[0];
    if (pos.size() > 1) c.n = examples::number<int>(pos[1], "n", 1);
    if (pos.size() > 2) c.panels = examples::number<int>(pos[2], "panels", 1);
    if (pos.size() > 3) c.tiles = examples::number<int>(pos[3], "tiles", 1);
    return c;
}

}  // namespace

int main(int argc, char** argv) try {
    auto flags = examples::model_flags::take(argc, argv);
    config c;
    try {
        c = parse(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "mmult: %s\n", e.what());
        return 2;
    }
    struct version {
        std::string name, queue = {}, priority = {};
    };
    std::vector<version> versions;
    if (c.variant == "all") versions = {{"bsp"}, {"overlap"}, {"graph", c.queue, c.priority}, {"ideal"}};
    else if (c.variant == "priorities")
        versions = {{"graph", "fifo", "none"},
                    {"graph", "fifo", "older"},
                    {"graph", "newest", "none"},
                    {"graph", "newest", "older"}};
    else if (c.variant == "graph") versions = {{"graph", c.queue, c.priority}};
    else if (c.variant == "bsp" || c.variant == "overlap" || c.variant == "ideal") versions = {{c.variant}};
    else {
        std::fprintf(stderr, "mmult: unknown variant '%s' (bsp, overlap, graph, ideal, all or priorities)\n",
                     c.variant.c_str());
        return 2;
    }
    bool right = true, bad_shape = false;
    examples::run_ranks(c.local_ranks, flags, "mmult", [&](auto& comm) {
        const int q = static_cast<int>(std::lround(std::sqrt(comm.size())));
        if (q * q != comm.size() || c.n % (q * c.panels) != 0 || (c.n / q) % c.tiles != 0 || (q == 1 && c.tiles < 2) ||
            c.panels < 1 || c.tiles < 1) {
            if (comm.rank() == 0)
                std::fprintf(stderr,
                             "mmult: needs a square number of ranks (not %d), N (%d) a multiple of ranks per side "
                             "x panels (%d), the block a multiple of tiles (%d), and 2 tiles or more on one rank\n",
                             comm.size(), c.n, c.panels, c.tiles);
            bad_shape = true;
            return;
        }
        for (int pass = 0; pass < c.repeat; ++pass)
            for (const auto& v : versions) {
                auto res = v.name == "graph" ? run_graph(comm, c, v.queue, v.priority)
                                             : run_block(comm, c, v.name != "ideal", v.name == "overlap");
                const double slowest = cc::allreduce(comm, res.ms, cc::maximum{});
                const auto t = comm.next_tag(cc::stream{});
                bool same = true;
                if (comm.rank() != 0) {
                    comm.send(0, t, std::move(res.c));
                } else {
                    const int n = c.n / q;
                    for (int r = 0; r < comm.size(); ++r) {
                        matrix blk = r == 0 ? std::move(res.c) : comm.template receive<matrix>(r, t);
                        if (!c.check || v.name == "ideal") continue;
                        const int bi = r / q, bj = r % q;
                        for (int x = 0; x < n && same; ++x)
                            for (int y = 0; y < n && same; ++y) {
                                double want = 0;
                                for (int k = 0; k < c.n; ++k) want += a_at(bi * n + x, k) * b_at(k, bj * n + y);
                                same = blk[static_cast<std::size_t>(x) * n + y] == want;
                            }
                    }
                    if (!same) right = false;
                    std::printf(
                        "{\"variant\":\"%s\",\"queue\":\"%s\",\"priority\":\"%s\",\"pass\":%d,\"ranks\":%d,\"n\":%d,"
                        "\"panels\":%d,\"tiles\":%d,\"ms\":%.3f,\"checked\":%s}\n",
                        v.name.c_str(), v.queue.c_str(), v.priority.c_str(), pass, comm.size(), c.n, c.panels,
                        v.name == "graph" ? c.tiles : 1, slowest,
                        !c.check || v.name == "ideal" ? "null" : (same ? "true" : "false"));
                    std::fflush(stdout);
                }
            }
    }, {.threads = static_cast<std::size_t>(c.threads)});
    if (bad_shape) return 2;
    return right ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "mmult: %s\n", e.what());
    return 1;
}
