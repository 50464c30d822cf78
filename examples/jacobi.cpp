// Jacobi relaxation of a 2-D grid, split into bands of rows, one band per
// rank, four ways (Thyme's comparison):
//
//   bsp       exchange the halo rows, wait for them, relax the band
//   overlap   hand-written split phase: send the halos, relax the rows that
//             need none, then wait and relax the two edge rows
//   graph     a task graph (dataflow/): each band cut into `blocks` tasks
//             that run as soon as their neighbours' rows are in, boundary
//             blocks first (priority metadata)
//   ideal     bsp without any communication: the computation alone (its
//             result is wrong by design, and not checked)
//
//   ./build/tools/csp-launch -n 4 ./build/examples/jacobi            # 4 nodes over TCP
//   ./build/examples/jacobi all 64 256 50 4 --ranks 3                # ranks as fibers
//   ./build/examples/jacobi graph 64 256 20 4 --gantt               # when each task ran
//   ./build/examples/jacobi graph 64 256 20 4 --timeline t.json     # Perfetto file
//
// Arguments: [variant|all] [rows per rank] [columns] [steps] [blocks per rank];
// flags: --ranks N (when not launched), --no-check, --workers N, --threads N,
// --repeat N,
// --priority boundary|older|none, --queue newest, --fail-at BLOCK STEP,
// --die-at BLOCK STEP, --gantt, --timeline FILE, --stats.
// Rank 0 prints one JSON line per variant: the time from a barrier before
// the first step to a barrier after the last (so that the ranks of ideal,
// which never wait for each other, are timed until the last is done). Every
// variant but ideal is compared bit for bit with a sequential relaxation of
// the whole grid; the program exits 1 if one differs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "arguments.hpp"
#include "dataflow/dataflow.hpp"
#include "jacobi_kernel.hpp"
#include "ranks.hpp"

namespace cc = csp::collectives;
namespace df = csp::dataflow;
using examples::jacobi::relax;
using examples::jacobi::top_boundary;

namespace {

struct config {
    std::string variant = "all";
    int rows = 256;  // per rank
    int cols = 1024;
    int steps = 100;
    int blocks = 8;  // per rank, graph variant
    int local_ranks = 4;
    bool check = true;
    int workers = 0;
    int threads = 1;
    int repeat = 1;  // passes over the variants (a benchmark drops the first)
    std::string priority = "boundary";
    std::string queue;
    bool gantt = false;
    bool stats = false;
    std::string timeline;
    long fail_block = -1;  // --fail-at: that block's body throws at that step
    int fail_step = -1;
    long die_block = -1;  // --die-at: that block's process exits at once (a lost node)
    int die_step = -1;
};

using grid = std::vector<double>;  // rows x cols, row-major

// The whole grid relaxed `steps` times on one core: the reference.
grid sequential(int rows, int cols, int steps) {
    grid cur(static_cast<std::size_t>(rows) * cols, 0.0), next(cur.size());
    const std::vector<double> top(cols, top_boundary), bottom(cols, 0.0);
    for (int s = 0; s < steps; ++s) {
        relax(top.data(), cur.data(), bottom.data(), next.data(), rows, cols);
        std::swap(cur, next);
    }
    return cur;
}

// This rank's band after `steps` (its rows, without halos), and the time
// the loop took.
struct band_result {
    grid band;
    double ms = 0;
};

// A band with a halo row above and below: rows 1..h are the rank's.
template <class C>
band_result run_band(C& comm, const config& c, bool exchange, bool split) {
    const int r = comm.rank(), p = comm.size(), h = c.rows, w = c.cols;
    auto row = [w](grid& g, int i) { return g.data() + static_cast<std::ptrdiff_t>(i) * w; };
    grid cur(static_cast<std::size_t>(h + 2) * w, 0.0), next(cur.size(), 0.0);
    if (r == 0) std::fill(row(cur, 0), row(cur, 1), top_boundary), std::fill(row(next, 0), row(next, 1), top_boundary);
    cc::barrier(comm);
    const auto t0 = std::chrono::steady_clock::now();
    for (int s = 0; s < c.steps; ++s) {
        const auto t = comm.next_tag(cc::stream{});
        if (exchange) {
            if (r > 0) comm.send(r - 1, t.step(0), grid(row(cur, 1), row(cur, 2)));
            if (r < p - 1) comm.send(r + 1, t.step(1), grid(row(cur, h), row(cur, h + 1)));
        }
        auto take_halos = [&] {
            if (!exchange) return;
            if (r > 0) {
                auto g = comm.template receive<grid>(r - 1, t.step(1));
                std::copy(g.begin(), g.end(), row(cur, 0));
            }
            if (r < p - 1) {
                auto g = comm.template receive<grid>(r + 1, t.step(0));
                std::copy(g.begin(), g.end(), row(cur, h + 1));
            }
        };
        if (split && h >= 3) {
            csp::yield();  // let the halos leave before the long relaxation
            relax(row(cur, 1), row(cur, 2), row(cur, h), row(next, 2), h - 2, w);
            take_halos();
            relax(row(cur, 0), row(cur, 1), row(cur, 2), row(next, 1), 1, w);
            relax(row(cur, h - 1), row(cur, h), row(cur, h + 1), row(next, h), 1, w);
        } else {
            take_halos();
            relax(row(cur, 0), row(cur, 1), row(cur, h + 1), row(next, 1), h, w);
        }
        std::swap(cur, next);
    }
    cc::barrier(comm);  // the time until every rank is done (ideal's ranks do not wait for each other)
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return {grid(row(cur, 1), row(cur, h + 1)), ms};
}

// The band as a task graph: block g (of blocks * ranks) holds rows_per_block
// rows and needs, from the previous step, itself and the nearest row of
// each neighbouring block.
template <class C>
band_result run_graph(C& comm, const config& c) {
    const int p = comm.size(), w = c.cols, b = c.blocks, rb = c.rows / c.blocks;
    const df::task_id n = static_cast<df::task_id>(p) * b;
    const int me = comm.rank();
    // Every block's first values and its second buffer are made before the
    // clock starts, as the band variants make theirs.
    std::vector<grid> first(b, grid(static_cast<std::size_t>(rb) * w, 0.0)),
        spare(b, grid(static_cast<std::size_t>(rb) * w)), final(b);
    const grid top(w, top_boundary), bottom(w, 0.0);
    auto on_rank_edge = [&](df::task_id g) { return (g % b == 0 && g > 0) || (g % b == b - 1 && g < n - 1); };

    df::task_graph<grid> graph{
        .tasks = n,
        .owner = [b](df::task_id g) { return static_cast<int>(g / b); },
        .edges =
            [n](df::task_id g) { return df::stencil_1d(g, n); },
        .body =
            [&](df::task<grid>& t) {
                const df::task_id g = t.id();
                if (g == c.fail_block && t.step() == c.fail_step)
                    throw std::runtime_error("injected failure in block " + std::to_string(g) + " at step " +
                                             std::to_string(t.step()));
                if (g == c.die_block && t.step() == c.die_step) std::_Exit(9);
                std::size_t k = 1;
                const grid& above = g > 0 ? t.input(k++) : top;
                const grid& below = g < n - 1 ? t.input(k++) : bottom;
                grid& old = t.input(0);
                const auto local = static_cast<std::size_t>(g - static_cast<df::task_id>(me) * b);
                grid next = std::move(spare[local]);
                relax(above.data(), old.data(), below.data(), next.data(), rb, w);
                spare[local] = std::move(old);
                std::size_t o = 1;
                if (g > 0) t.emit(o++, grid(next.begin(), next.begin() + w));
                if (g < n - 1) t.emit(o++, grid(next.end() - w, next.end()));
                if (t.last_step()) final[local] = std::move(next);  // its own next step never comes
                else t.emit(0, std::move(next));
            },
        .initial = [&first, me, b, w](df::task_id g, std::size_t input, int) {
            if (input == 0) return std::move(first[static_cast<std::size_t>(g - static_cast<df::task_id>(me) * b)]);
            return grid(static_cast<std::size_t>(w), 0.0);  // a halo row
        },
        .name = [](df::task_id g) { return "block " + std::to_string(g); },
    };
    if (c.priority == "boundary")
        graph.priority = [on_rank_edge](df::task_id g, int) -> std::int64_t { return on_rank_edge(g) ? 1 : 0; };
    else if (c.priority == "older")
        graph.priority = df::older_first;
    df::run_options o{.workers = c.workers, .trace = c.gantt || !c.timeline.empty(), .time_bodies = c.stats};
    if (c.queue == "newest") o.queue = [] { return std::make_unique<df::newest_first>(); };

    cc::barrier(comm);
    const auto t0 = std::chrono::steady_clock::now();
    df::graph_trace trace;
    const auto st = df::run(comm, graph, c.steps, o, o.trace ? &trace : nullptr);
    cc::barrier(comm);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (c.stats)
        std::fprintf(stderr, "rank %d: %llu tasks run, %llu values sent, %llu received, %llu handed over; "
                     "%.3f ms in bodies of %.3f ms\n", me, static_cast<unsigned long long>(st.instances),
                     static_cast<unsigned long long>(st.sent), static_cast<unsigned long long>(st.received),
                     static_cast<unsigned long long>(st.handed), st.busy_ns / 1e6, st.elapsed_ns / 1e6);
    if (o.trace) {
        auto all = trace.collect(comm);
        if (me == 0 && c.gantt) all.write_gantt(std::cout, 110);
        if (me == 0 && !c.timeline.empty()) {
            std::ofstream f(c.timeline);
            all.write_chrome(f, graph.name);
            f.flush();
            if (!f) throw std::runtime_error("cannot write " + c.timeline);
        }
    }
    band_result out;
    out.ms = ms;
    for (auto& blk : final) out.band.insert(out.band.end(), blk.begin(), blk.end());
    return out;
}

config parse(int argc, char** argv) {
    constexpr std::string_view usage =
        "[bsp|overlap|graph|ideal|all] [rows per rank] [columns] [steps] [blocks per rank] [--ranks N] "
        "[--no-check] [--workers N] [--threads N] [--repeat N] [--priority boundary|older|none] [--queue newest] "
        "[--fail-at BLOCK STEP] [--die-at BLOCK STEP] [--gantt] [--timeline FILE] [--stats]";
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
        else if (a == "--workers") c.workers = examples::number<int>(value(), "--workers", 0);
        else if (a == "--threads") c.threads = examples::number<int>(value(), "--threads", 1);
        else if (a == "--repeat") c.repeat = examples::number<int>(value(), "--repeat", 1);
        else if (a == "--priority") c.priority = value();
        else if (a == "--queue") c.queue = value();
        else if (a == "--gantt") c.gantt = true;
        else if (a == "--stats") c.stats = true;
        else if (a == "--timeline") c.timeline = value();
        else if (a == "--fail-at" || a == "--die-at") {
            long& block = a == "--fail-at" ? c.fail_block : c.die_block;
            int& step = a == "--fail-at" ? c.fail_step : c.die_step;
            block = examples::number<long>(value(), a + "'s block");
            step = examples::number<int>(value(), a + "'s step");
        } else if (a == "--help" || a == "-h") examples::show_usage(usage);
        else if (a.rfind("--", 0) == 0) throw std::invalid_argument("unknown flag " + a);
        else pos.push_back(a);
    }
    examples::at_most(pos, 5, usage);
    if (pos.size() > 0) c.variant = pos[0];
    if (pos.size() > 1) c.rows = examples::number<int>(pos[1], "rows per rank", 1);
    if (pos.size() > 2) c.cols = examples::number<int>(pos[2], "columns", 2);
    if (pos.size() > 3) c.steps = examples::number<int>(pos[3], "steps", 0);
    if (pos.size() > 4) c.blocks = examples::number<int>(pos[4], "blocks per rank", 1);
    // The sizes' ranges were checked as they were read (the defaults are in range).
    if (c.rows % c.blocks != 0)
        throw std::invalid_argument("rows per rank (" + std::to_string(c.rows) +
                                    ") must be a multiple of blocks per rank (" + std::to_string(c.blocks) + ")");
    // Found now, not after the run (when rank 0 alone would fail).
    if (!c.timeline.empty() && !std::ofstream(c.timeline))
        throw std::invalid_argument("--timeline: cannot write " + c.timeline);
    return c;
}

}  // namespace

int main(int argc, char** argv) try {
    auto flags = examples::model_flags::take(argc, argv);
    config c;
    try {
        c = parse(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "jacobi: %s\n", e.what());
        return 2;
    }
    const std::vector<std::string> variants =
        c.variant == "all" ? std::vector<std::string>{"bsp", "overlap", "graph", "ideal"}
                           : std::vector<std::string>{c.variant};
    for (const auto& v : variants)
        if (v != "bsp" && v != "overlap" && v != "graph" && v != "ideal") {
            std::fprintf(stderr, "jacobi: unknown variant '%s' (bsp, overlap, graph, ideal or all)\n", v.c_str());
            return 2;
        }
    bool right = true;
    bool stopped = false;
    examples::run_ranks(c.local_ranks, flags, "jacobi", [&](auto& comm) {
        const int p = comm.size();
        grid reference;
        if (c.check && comm.rank() == 0) reference = sequential(c.rows * p, c.cols, c.steps);
        for (int pass = 0; pass < c.repeat; ++pass)
        for (const auto& v : variants) {
            band_result res;
            try {
                res = v == "graph" ? run_graph(comm, c) : run_band(comm, c, v != "ideal", v == "overlap");
            } catch (const std::exception& e) {
                std::printf("rank %d: jacobi %s stopped: %s\n", comm.rank(), v.c_str(), e.what());
                std::fflush(stdout);
                stopped = true;
                return;
            }
            const double slowest = cc::allreduce(comm, res.ms, cc::maximum{});
            // Gather the bands at rank 0 for the check.
            const auto t = comm.next_tag(cc::stream{});
            bool same = true;
            if (comm.rank() != 0) {
                comm.send(0, t, std::move(res.band));
            } else if (c.check && v != "ideal") {
                grid all = std::move(res.band);
                for (int r = 1; r < p; ++r) {
                    auto b = comm.template receive<grid>(r, t);
                    all.insert(all.end(), b.begin(), b.end());
                }
                same = all.size() == reference.size() &&
                       std::memcmp(all.data(), reference.data(), all.size() * sizeof(double)) == 0;
                if (!same) right = false;
            } else {
                for (int r = 1; r < p; ++r) (void)comm.template receive<grid>(r, t);
            }
            if (comm.rank() == 0) {
                std::printf(
                    "{\"variant\":\"%s\",\"pass\":%d,\"ranks\":%d,\"rows_per_rank\":%d,\"cols\":%d,\"steps\":%d,"
                    "\"blocks_per_rank\":%d,\"ms\":%.3f,\"us_per_step\":%.2f,\"checked\":%s}\n",
                    v.c_str(), pass, p, c.rows, c.cols, c.steps, v == "graph" ? c.blocks : 1, slowest,
                    1000.0 * slowest / std::max(1, c.steps),
                    !c.check || v == "ideal" ? "null" : (same ? "true" : "false"));
                std::fflush(stdout);
            }
        }
    }, {.threads = static_cast<std::size_t>(c.threads)});
    if (stopped) return 3;
    return right ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "jacobi: %s\n", e.what());
    return 1;
}
