// This project's side of bench/collectives_vs_mpi. Each rank times a
// back-to-back loop of one collective (after warm-up and a barrier); the
// figure is the slowest rank's time per operation. One line per figure:
//
//   RESULT <collective> <algorithm> <ranks> <bytes> <microseconds>
//
//   collectives_rank net            under csp-launch: ranks are OS processes
//   collectives_rank local <n>      ranks are processes of one runtime
//   collectives_rank small          under csp-launch: allreduce of 8 B only
//   collectives_rank allreduce <bytes> [iterations] [algorithm]
//                                   under csp-launch: allreduce of one size, the
//                                   table's choice and each algorithm, or only
//                                   the one named (for A/B runs and profiles)
//   collectives_rank figure5 net    Aspen's Figure 5 under csp-launch -n 4
//   collectives_rank figure5 local
//   collectives_rank scan           under csp-launch: scan and exscan of 8 B,
//                                   64 KiB and 1 MiB, the table's choice and
//                                   each algorithm
//   collectives_rank scan <bytes> [iterations] [algorithm]
//                                   under csp-launch: scan and exscan of one
//                                   size, as allreduce <bytes> above
//   collectives_rank broadcast      under csp-launch: broadcast_into a buffer
//                                   from 8 B to 1 MiB, the table's choice, the
//                                   host board and the tree (what sets its rule)
//   collectives_rank hybrid <f>     under csp-launch: f ranks as fibers per node
//                                   (hybrid_communicator.hpp), allreduce flat
//                                   by the table and two-level by node
//   collectives_rank hybrid <f> rooted
//                                   the same job: reduce, broadcast, gather
//                                   and allgather, by the table and flat
//   collectives_rank hosts <k>      under csp-launch: k processes per host, as
//                                   on a cluster of n / k hosts (each node is
//                                   told its host holds k ranks, and the
//                                   hierarchy names hosts by rank / k):
//                                   allreduce, reduce and broadcast flat by
//                                   the table (the network level) and
//                                   two-level, the host groups on their
//                                   boards where the links share memory
#include <algorithm>
#include <chrono>
#include <span>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "collectives/collectives.hpp"
#include "collectives/hierarchy.hpp"
#include "collectives/hybrid_communicator.hpp"
#include "collectives/net_communicator.hpp"
#include "csp/runtime.hpp"

namespace cc = csp::collectives;
using clock_type = std::chrono::steady_clock;

namespace {

// Iterations for a message size: enough to last well above timer noise.
int iterations_for(std::size_t bytes) { return bytes <= 64 ? 2000 : bytes <= 65536 ? 200 : 40; }

template <class C, class F>
double time_per_op(C& comm, int iterations, F op) {
    for (int i = 0; i < iterations / 10 + 1; ++i) op();
    cc::barrier_binomial(comm);
    const auto t0 = clock_type::now();
    for (int i = 0; i < iterations; ++i) op();
    const double us = std::chrono::duration<double, std::micro>(clock_type::now() - t0).count() / iterations;
    return cc::allreduce_butterfly(comm, us, cc::maximum{});
}

// Latency rather than throughput: each operation starts from a barrier and
// is timed alone at each rank; the figure is the slowest rank's mean.
template <class C, class F>
double time_between_barriers(C& comm, int iterations, F op) {
    for (int i = 0; i < iterations / 10 + 1; ++i) op();
    std::chrono::duration<double, std::micro> total{};
    for (int i = 0; i < iterations; ++i) {
        cc::barrier_binomial(comm);
        const auto t0 = clock_type::now();
        op();
        total += clock_type::now() - t0;
    }
    return cc::allreduce_butterfly(comm, total.count() / iterations, cc::maximum{});
}

template <class C>
void report(C& comm, const char* collective, const char* algorithm, std::size_t bytes, double us) {
    if (comm.rank() == 0)
        std::printf("RESULT %s %s %d %zu %.3f\n", collective, algorithm, comm.size(), bytes, us), std::fflush(stdout);
}

// "table:" and the table's algorithm for `collective` of `bytes` with a
// built-in op (element-wise on a vector, or on one value) at comm's level.
template <class C>
std::string table_choice(C& comm, const char* collective, std::size_t bytes, bool elementwise) {
    return "table:" + std::string(cc::selection::global().choose(
                          cc::detail::request_of(comm, collective, cc::stream{}, bytes, true, elementwise)));
}

// A loop body for a collective that takes a vector and returns its result
// (a vector, or an optional one: exscan's, none at rank 0): the result goes
// into one vector the loop keeps, as MPI's loops keep their receive buffer.
// The input is copied into it (as MPI copies its send buffer into its
// receive buffer) and the call takes it by move, so the loop allocates
// nothing of its own where the collective hands its buffer back. A vector
// made afresh for every call paid page faults (docs/performance.md, "Where
// the first calls go") whenever small allocations had split the heap's
// free chunk under it.
template <class F>
auto into_kept(const std::vector<double>& input, std::vector<double>& result, F collective) {
    return [&input, &result, collective] {
        result.assign(input.begin(), input.end());
        auto out = collective(std::move(result));
        if constexpr (std::is_same_v<decltype(out), std::vector<double>>) {
            result = std::move(out);
        } else if (out) {
            result = std::move(*out);
        }
    };
}

// Allreduce of `bytes` (a vector of doubles): the table's choice and every
// algorithm, or only the algorithm named `only`.
template <class C>
void allreduce_of(C& comm, std::size_t bytes, int iterations, const std::string& only) {
    std::vector<double> v(std::max<std::size_t>(bytes / sizeof(double), 1), 1.0);
    std::vector<double> result(v);
    const std::string chosen = table_choice(comm, "allreduce", bytes, true);
    auto table = [&](auto x) { return cc::allreduce(comm, std::move(x), cc::sum{}); };
    if (only.empty())
        report(comm, "allreduce", chosen.c_str(), bytes, time_per_op(comm, iterations, into_kept(v, result, table)));
    cc::registry::allreduce::for_each([&](auto algorithm) {
        if (!only.empty() && algorithm.info.name != only) return;
        report(comm, "allreduce", std::string(algorithm.info.name).c_str(), bytes,
               time_per_op(comm, iterations,
                           into_kept(v, result, [&](auto x) { return algorithm(comm, std::move(x), cc::sum{}); })));
    });
}

template <class C>
void standard_set(C& comm) {
    for (std::size_t bytes : {std::size_t{8}, std::size_t{65536}, std::size_t{1} << 20})
        allreduce_of(comm, bytes, iterations_for(bytes), "");
    // reduce_scatter: `bytes` is the whole vector (8 ranks divide it);
    // allgather: each rank's part.
    for (std::size_t bytes : {std::size_t{65536}, std::size_t{1} << 20}) {
        std::vector<double> v(bytes / sizeof(double), 1.0);
        const int k = iterations_for(bytes);
        const std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size()), v.size() / comm.size());
        cc::registry::reduce_scatter::for_each([&](auto algorithm) {
            report(comm, "reduce_scatter", std::string(algorithm.info.name).c_str(), bytes,
                   time_per_op(comm, k, [&] { algorithm(comm, v, counts, cc::sum{}); }));
        });
        cc::registry::allgather::for_each([&](auto algorithm) {
            report(comm, "allgather", std::string(algorithm.info.name).c_str(), bytes,
                   time_per_op(comm, k, [&] { algorithm(comm, v); }));
        });
        cc::registry::broadcast::for_each([&](auto algorithm) {
            report(comm, "broadcast", std::string(algorithm.info.name).c_str(), bytes,
                   time_per_op(comm, k, [&] { algorithm(comm, v, 0); }));
        });
        cc::registry::reduce::for_each([&](auto algorithm) {
            report(comm, "reduce", std::string(algorithm.info.name).c_str(), bytes,
                   time_per_op(comm, k, [&] { (void)algorithm(comm, v, cc::sum{}, 0); }));
        });
    }
    std::vector<double> small(1, 1.0);
    const int k = iterations_for(8);
    report(comm, "reduce", "binomial_parallel", 8,
           time_per_op(comm, k, [&] { cc::reduce_binomial_parallel(comm, small, cc::sum{}, 0); }));
    report(comm, "reduce", "host_memory", 8,
           time_per_op(comm, k, [&] { cc::reduce_host_memory(comm, small, cc::sum{}, 0); }));
    report(comm, "broadcast", "binomial", 8,
           time_per_op(comm, k, [&] { cc::broadcast_binomial(comm, small, 0); }));
    report(comm, "broadcast", "host_memory", 8,
           time_per_op(comm, k, [&] { cc::broadcast_host_memory(comm, small, 0); }));
    cc::registry::allgather::for_each([&](auto algorithm) {
        report(comm, "allgather", std::string(algorithm.info.name).c_str(), 8,
               time_per_op(comm, k, [&] { algorithm(comm, small); }));
    });
    const std::string barrier_chosen = table_choice(comm, "barrier", 0, false);
    report(comm, "barrier", barrier_chosen.c_str(), 0, time_per_op(comm, k, [&] { cc::barrier(comm); }));
    cc::registry::barrier::for_each([&](auto algorithm) {
        report(comm, "barrier", std::string(algorithm.info.name).c_str(), 0,
               time_per_op(comm, k, [&] { algorithm(comm); }));
    });
}

// broadcast_into by size: the table's choice, the host board's copy into
// the buffer and the binomial tree's vector copied into it (the two the
// table chooses between on one host).
template <class C>
void broadcast_set(C& comm) {
    for (std::size_t bytes : {std::size_t{8}, std::size_t{1024}, std::size_t{4096}, std::size_t{16384},
                              std::size_t{65536}, std::size_t{1} << 20}) {
        std::vector<double> buffer(bytes / sizeof(double), 1.0);
        const std::span<double> data(buffer);
        const int k = iterations_for(bytes);
        const std::string chosen = table_choice(comm, "broadcast", bytes, true);
        report(comm, "broadcast_into", chosen.c_str(), bytes,
               time_per_op(comm, k, [&] { cc::broadcast_into(comm, data, 0); }));
        report(comm, "broadcast_into", "host_memory", bytes,
               time_per_op(comm, k, [&] { (void)cc::broadcast_host_memory.into(comm, data, 0, {}); }));
        report(comm, "broadcast_into", "binomial", bytes, time_per_op(comm, k, [&] {
                   auto v = cc::broadcast_binomial(comm, comm.rank() == 0 ? buffer : std::vector<double>{}, 0);
                   std::copy(v.begin(), v.end(), data.begin());
               }));
    }
}

// Scan and exscan (sums of doubles) of one size: the table's choice and
// every algorithm, or only the one named (both scan's and exscan's of that
// name: for A/B runs and profiles).
template <class C>
void scan_of(C& comm, std::size_t bytes, int iterations, const std::string& only) {
    std::vector<double> v(std::max<std::size_t>(bytes / sizeof(double), 1), 1.0);
    std::vector<double> result(v);
    const std::string chosen = table_choice(comm, "scan", bytes, true);
    auto table = [&](auto x) { return cc::scan(comm, std::move(x), cc::sum{}); };
    if (only.empty())
        report(comm, "scan", chosen.c_str(), bytes, time_per_op(comm, iterations, into_kept(v, result, table)));
    auto each = [&](const char* collective, auto algorithm) {
        if (!only.empty() && algorithm.info.name != only) return;
        report(comm, collective, std::string(algorithm.info.name).c_str(), bytes,
               time_per_op(comm, iterations,
                           into_kept(v, result, [&](auto x) { return algorithm(comm, std::move(x), cc::sum{}); })));
    };
    cc::registry::scan::for_each([&](auto algorithm) { each("scan", algorithm); });
    cc::registry::exscan::for_each([&](auto algorithm) { each("exscan", algorithm); });
}

// 2,000 scans of 8 B take a few ms at 2 ranks, too short to measure a
// chain's steady state (0.5-4 us per call in such runs).
int scan_iterations_for(std::size_t bytes) { return bytes <= 64 ? 20'000 : iterations_for(bytes); }

// Scan and exscan of 8 B, 64 KiB and 1 MiB (beside mpi_collectives scan).
template <class C>
void scan_set(C& comm) {
    for (std::size_t bytes : {std::size_t{8}, std::size_t{65536}, std::size_t{1} << 20})
        scan_of(comm, bytes, scan_iterations_for(bytes), "");
}

// Allreduce of one double only, every message-passing algorithm and the
// table's choice (bench/intranode_allreduce).
template <class C>
void small_set(C& comm) {
    constexpr int k = 2000;
    const double x = 1.0;
    const std::string chosen = table_choice(comm, "allreduce", 8, false);
    report(comm, "allreduce", chosen.c_str(), 8, time_per_op(comm, k, [&] { cc::allreduce(comm, x, cc::sum{}); }));
    report(comm, "allreduce", "butterfly", 8,
           time_per_op(comm, k, [&] { cc::allreduce_butterfly(comm, x, cc::sum{}); }));
    report(comm, "allreduce", "reduce_broadcast", 8,
           time_per_op(comm, k, [&] { cc::allreduce_reduce_broadcast(comm, x, cc::sum{}); }));
    report(comm, "allreduce", "host_memory", 8,
           time_per_op(comm, k, [&] { cc::allreduce_host_memory(comm, x, cc::sum{}); }));
}

// The algorithm the table takes for `collective` on a hybrid communicator
// as if it had no levels of its own (two_levels.hpp).
std::string flat_choice(cc::hybrid_communicator& c, const char* collective, std::size_t bytes, bool elementwise) {
    auto request = cc::detail::request_of(c, collective, cc::stream{}, bytes, true, elementwise);
    request.two_levels = false;
    return std::string(cc::selection::global().choose(request));
}

// A hybrid job: the table's allreduce and barrier (on the job's two
// levels), the flat algorithms the table takes without levels, and the
// hierarchical ones by name on a hierarchy made here.
void hybrid_set(cc::hybrid_communicator& c) {
    cc::hierarchy h(c, "node" + std::to_string(c.node()));
    for (std::size_t bytes : {std::size_t{8}, std::size_t{1024}, std::size_t{16384}, std::size_t{65536},
                              std::size_t{262144}, std::size_t{1} << 20}) {
        std::vector<double> v(bytes / sizeof(double), 1.0);
        std::vector<double> result(v);
        const int k = iterations_for(bytes);
        const std::string chosen = "hybrid_" + table_choice(c, "allreduce", bytes, true);
        const std::string flat = flat_choice(c, "allreduce", bytes, true);
        auto table = [&](auto x) { return cc::allreduce(c, std::move(x), cc::sum{}); };
        auto flat_call = [&](auto x) { return cc::registry::allreduce::run(flat, c, std::move(x), cc::sum{}); };
        auto two_levels = [&](auto x) { return cc::hierarchical::allreduce(h, std::move(x), cc::sum{}); };
        auto across = [&](auto x) { return cc::hierarchical::allreduce_across(h, std::move(x), cc::sum{}); };
        report(c, "allreduce", chosen.c_str(), bytes, time_per_op(c, k, into_kept(v, result, table)));
        report(c, "allreduce", ("hybrid_flat:" + flat).c_str(), bytes,
               time_per_op(c, k, into_kept(v, result, flat_call)));
        report(c, "allreduce", "hybrid_hierarchical", bytes, time_per_op(c, k, into_kept(v, result, two_levels)));
        if (h.across() != nullptr)
            report(c, "allreduce", "hybrid_hierarchical_across", bytes,
                   time_per_op(c, k, into_kept(v, result, across)));
    }
    const int k = iterations_for(8);
    const std::string chosen = "hybrid_" + table_choice(c, "barrier", 0, false);
    const std::string flat = flat_choice(c, "barrier", 0, false);
    report(c, "barrier", chosen.c_str(), 0, time_per_op(c, k, [&] { cc::barrier(c); }));
    report(c, "barrier", ("hybrid_flat:" + flat).c_str(), 0,
           time_per_op(c, k, [&] { cc::registry::barrier::run(flat, c); }));
}

// A hybrid job's rooted collectives and allgather (root 0, a node's
// leader, and the last rank, another node's last fiber): the table's
// choice (on the job's levels where it takes them), the flat algorithm the
// table takes without levels, and broadcast's hierarchical one by name. At
// each size a shorter pass goes unreported first: the first loops of a
// size paid for the heap's growth (up to 8 MiB results at a gather's root),
// which made whichever ran first look slower.
void hybrid_rooted_set(cc::hybrid_communicator& c) {
    cc::hierarchy h(c, "node" + std::to_string(c.node()));
    for (std::size_t bytes : {std::size_t{8}, std::size_t{1024}, std::size_t{65536}, std::size_t{1} << 20}) {
        const std::vector<double> v(bytes / sizeof(double), 1.0);
        for (const bool counted : {false, true}) {
            const int k = counted ? iterations_for(bytes) : iterations_for(bytes) / 4;
            auto measure = [&](const char* collective, const std::string& name, auto op) {
                const double us = time_per_op(c, k, op);
                if (counted) report(c, collective, name.c_str(), bytes, us);
            };
            for (const int root : {0, c.size() - 1}) {
                const std::string at = "_root" + std::to_string(root);
                const std::string reduce_flat = flat_choice(c, "reduce", bytes, true);
                measure("reduce", "hybrid_" + table_choice(c, "reduce", bytes, true) + at,
                        [&] { (void)cc::reduce(c, v, cc::sum{}, root); });
                measure("reduce", "hybrid_flat:" + reduce_flat + at,
                        [&] { (void)cc::registry::reduce::run(reduce_flat, c, v, cc::sum{}, root); });
                measure("broadcast", "hybrid_" + table_choice(c, "broadcast", 0, true) + at,
                        [&] { (void)cc::broadcast(c, v, root); });
                measure("broadcast", "hybrid_hierarchical" + at,
                        [&] { (void)cc::hierarchical::broadcast(h, v, root); });
                const std::string gather_flat = flat_choice(c, "gather", 0, false);
                measure("gather", "hybrid_" + table_choice(c, "gather", 0, false) + at,
                        [&] { (void)cc::gather(c, v, root); });
                measure("gather", "hybrid_flat:" + gather_flat + at,
                        [&] { (void)cc::registry::gather::run(gather_flat, c, v, root); });
            }
            const std::string allgather_flat = flat_choice(c, "allgather", bytes, false);
            measure("allgather", "hybrid_" + table_choice(c, "allgather", bytes, false),
                    [&] { (void)cc::allgather(c, v); });
            measure("allgather", "hybrid_flat:" + allgather_flat,
                    [&] { (void)cc::registry::allgather::run(allgather_flat, c, v); });
        }
    }
}

// k processes per host (see the header): the table's flat collectives over
// the whole job (its level: the network) and the hierarchical ones.
void hosts_set(cc::net_communicator& comm, int k) {
    cc::hierarchy h(comm, "h" + std::to_string(comm.rank() / k));
    for (std::size_t bytes : {std::size_t{8}, std::size_t{65536}, std::size_t{1} << 20}) {
        std::vector<double> v(bytes / sizeof(double), 1.0);
        std::vector<double> result(v);
        const int n = iterations_for(bytes);
        const std::string chosen = table_choice(comm, "allreduce", bytes, true);
        auto table = [&](auto x) { return cc::allreduce(comm, std::move(x), cc::sum{}); };
        auto two_levels = [&](auto x) { return cc::hierarchical::allreduce(h, std::move(x), cc::sum{}); };
        report(comm, "allreduce", chosen.c_str(), bytes, time_per_op(comm, n, into_kept(v, result, table)));
        report(comm, "allreduce", "hierarchical", bytes, time_per_op(comm, n, into_kept(v, result, two_levels)));
        // Its steps inside the hosts (every host at once), by the table at
        // the host groups' level.
        report(comm, "reduce", "inside_hosts", bytes,
               time_per_op(comm, n, [&] { (void)cc::reduce(h.local(), v, cc::sum{}, 0); }));
        report(comm, "broadcast", "inside_hosts", bytes,
               time_per_op(comm, n, [&] { (void)cc::broadcast(h.local(), v, 0); }));
        auto inside = [&](auto x) { return cc::allreduce(h.local(), std::move(x), cc::sum{}); };
        report(comm, "allreduce", "inside_hosts", bytes, time_per_op(comm, n, into_kept(v, result, inside)));
        report(comm, "reduce", "table", bytes, time_per_op(comm, n, [&] { (void)cc::reduce(comm, v, cc::sum{}, 0); }));
        report(comm, "reduce", "hierarchical", bytes,
               time_per_op(comm, n, [&] { (void)cc::hierarchical::reduce(h, v, cc::sum{}, 0); }));
        report(comm, "broadcast", "table", bytes, time_per_op(comm, n, [&] { (void)cc::broadcast(comm, v, 0); }));
        report(comm, "broadcast", "hierarchical", bytes,
               time_per_op(comm, n, [&] { (void)cc::hierarchical::broadcast(h, v, 0); }));
    }
}

// Ranks as processes of one runtime: the small-value latencies, on the
// shared board (the table's choice) and by message passing.
void local_set(cc::local_communicator& c) {
    constexpr int k = 20000;
    const double x = 1.0;
    const auto request = cc::detail::request_of(c, "allreduce", cc::stream{}, 8, true, false);
    const std::string chosen = "table:" + std::string(cc::selection::global().choose(request));
    report(c, "allreduce", chosen.c_str(), 8, time_per_op(c, k, [&] { cc::allreduce(c, x, cc::sum{}); }));
    report(c, "allreduce", "butterfly", 8, time_per_op(c, k, [&] { cc::allreduce_butterfly(c, x, cc::sum{}); }));
    report(c, "allreduce", "reduce_broadcast", 8,
           time_per_op(c, k, [&] { cc::allreduce_reduce_broadcast(c, x, cc::sum{}); }));
    report(c, "reduce", "shared_memory", 8, time_per_op(c, k, [&] { cc::reduce_shared_memory(c, x, cc::sum{}, 0); }));
    report(c, "broadcast", "shared_memory", 8, time_per_op(c, k, [&] { cc::broadcast_shared_memory(c, x, 0); }));
    report(c, "barrier", "shared_memory", 0, time_per_op(c, k, [&] { cc::barrier_shared_memory(c); }));
    std::vector<double> big(65536 / sizeof(double), 1.0);
    report(c, "allreduce", "shared_memory", 65536,
           time_per_op(c, 200, [&] { cc::allreduce_shared_memory(c, big, cc::sum{}); }));
}

// Aspen's Figure 5 on four ranks, timed both ways (loop, between barriers): r1 sums all four and delivers to 0 and 2;
// r2 multiplies 1 and 2 and delivers to 3. "concurrent" runs both at once
// with Aspen's reduce; "mpi_style" runs each as a blocking binomial reduce
// followed by a broadcast to its receivers, one after the other (what MPI
// needs: sub-communicators {1,2} and {0,2}, {1,3}).
template <class C>
void figure5(C& comm) {
    if (comm.size() != 4) throw csp::usage_error("figure 5 needs 4 ranks");
    const int me = comm.rank();
    const std::vector<int> P1{0, 1, 2, 3}, R1{0, 2}, P2{1, 2}, R2{3};
    const double x = 1.0 + me;
    const auto plan1 = cc::aspen_plan(comm, P1, R1), plan2 = cc::aspen_plan(comm, P2, R2);
    auto concurrent = [&] {
        csp::par([&] { cc::aspen_reduce(comm, std::optional(x), plan1, cc::sum{}, cc::stream{1}); },
                 [&] {
                     cc::aspen_reduce(comm, me == 1 || me == 2 ? std::optional(x) : std::nullopt, plan2,
                                      cc::product{}, cc::stream{2});
                 });
    };
    auto mpi_style = [&] {
        const cc::tag t = comm.next_tag(cc::stream{3});
        auto r1 = cc::reduce_binomial(comm, x, cc::sum{}, 0, cc::stream{3});
        if (me == 0) comm.send(2, t, *r1);  // broadcast within {0, 2}
        if (me == 2) comm.template receive<double>(0, t);
        if (me == 2) comm.send(1, t.step(1), x);  // reduce within {1, 2} to 1
        if (me == 1) {
            double r2 = x * comm.template receive<double>(2, t.step(1));
            comm.send(3, t.step(2), r2);  // broadcast within {1, 3}
        }
        if (me == 3) comm.template receive<double>(1, t.step(2));
    };
    const int k = iterations_for(8);
    report(comm, "figure5", "mpi_style/loop", 8, time_per_op(comm, k, mpi_style));
    report(comm, "figure5", "concurrent/loop", 8, time_per_op(comm, k, concurrent));
    report(comm, "figure5", "mpi_style/barriers", 8, time_between_barriers(comm, k / 4, mpi_style));
    report(comm, "figure5", "concurrent/barriers", 8, time_between_barriers(comm, k / 4, concurrent));
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "net";
    const bool fig5 = mode == "figure5";
    const std::string where = fig5 ? (argc > 2 ? argv[2] : "net")
                              : mode == "small" || mode == "broadcast" || mode == "allreduce" || mode == "scan" ? "net"
                                                                                                                : mode;
    try {
        if (where == "local") {
            const int n = fig5 ? 4 : (argc > 2 ? std::atoi(argv[2]) : 8);
            csp::run([&] {
                cc::run_local(n, [&](cc::local_communicator& c) {
                    if (fig5) return figure5(c);
                    local_set(c);
                });
            });
        } else if (mode == "hybrid") {
            const int fibers = argc > 2 ? std::atoi(argv[2]) : 4;
            const bool rooted = argc > 3 && std::string(argv[3]) == "rooted";
            csp::run([&] {
                csp::net::node self;
                {
                    cc::hybrid_job job(self, fibers);
                    job.run([&](cc::hybrid_communicator& c) {
                        if (rooted) hybrid_rooted_set(c);
                        else hybrid_set(c);
                        cc::barrier(c);
                    });
                }
                self.close();
            });
        } else if (mode == "hosts") {
            const int k = argc > 2 ? std::atoi(argv[2]) : 4;
            csp::run([&] {
                csp::net::node_options o = csp::net::node_options::from_environment();
                o.local_size = k;
                csp::net::node self(o);
                {
                    cc::net_communicator comm(self);
                    hosts_set(comm, k);
                    cc::barrier(comm);
                }
                self.close();
            });
        } else {
            csp::run([&] {
                csp::net::node self;
                {
                    cc::net_communicator comm(self);
                    if (fig5) figure5(comm);
                    else if (mode == "small") small_set(comm);
                    else if (mode == "broadcast") broadcast_set(comm);
                    else if (mode == "scan" && argc > 2) {
                        const std::size_t bytes = std::strtoull(argv[2], nullptr, 10);
                        scan_of(comm, bytes, argc > 3 ? std::atoi(argv[3]) : scan_iterations_for(bytes),
                                argc > 4 ? argv[4] : "");
                    }
                    else if (mode == "scan") scan_set(comm);
                    else if (mode == "allreduce") {
                        const std::size_t bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 65536;
                        allreduce_of(comm, bytes, argc > 3 ? std::atoi(argv[3]) : iterations_for(bytes),
                                     argc > 4 ? argv[4] : "");
                    }
                    else standard_set(comm);
                    cc::barrier(comm);
                }
                self.close();
            });
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "collectives_rank: %s\n", e.what());
        return 1;
    }
}
