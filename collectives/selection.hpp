#pragma once
// Which algorithm a collective call runs.
//
// The default is a data table: for each collective, rules tried in order;
// the first whose group-size and message-size limits admit the call, and
// whose algorithm can be used (some need an op that commutes), wins. The
// last rule of each collective admits everything it can.
//
// An override names the algorithm per collective, from the environment
//
//   CSP_COLLECTIVES="allreduce=reduce_broadcast,reduce=flat_in_order"
//
// (read on first use) or from the program (selection::force, which wins over
// the environment). A forced algorithm that cannot be used for a call falls
// back to the table; the tracing communicator shows what actually ran.
// print_table() shows the effective choices.
//
// The choice must be the same at every rank: it uses the group size, and
// the message size only for collectives in which every rank passes a value
// of the same size.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iosfwd>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "collectives/registry.hpp"
#include "csp/config.hpp"
#include "csp/error.hpp"

namespace csp::collectives {

// Where a communicator's messages go: between processes of one host over
// shared memory (UCX), or over a network (TCP, also between processes of one
// host). Ranks of one address space are told apart by shares_memory.
enum class link_level : std::uint8_t { any, host, network };

// Whether the job's ranks outnumber the CPUs they run on (crowded) or are
// not known to (uncrowded: a job over several hosts, or one whose placement
// its launcher did not give). With more ranks than cores a message waits
// until its receiver is scheduled, so the total number of messages costs
// more than the number of rounds; with a core per rank the rounds count.
// Known alike at every rank (net::node::job_oversubscribed), as a rule's
// choice must be.
enum class crowding : std::uint8_t { any, crowded, uncrowded };

struct selection_rule {
    std::string_view collective;
    std::string_view algorithm;
    int max_ranks = std::numeric_limits<int>::max();
    std::size_t min_bytes = 0;
    link_level level = link_level::any;  // any: whatever the communicator's
    std::size_t below_bytes = std::numeric_limits<std::size_t>::max();  // admits only calls of fewer bytes
    crowding crowd = crowding::any;
};

inline constexpr int any_size = std::numeric_limits<int>::max();
inline constexpr std::size_t no_limit = std::numeric_limits<std::size_t>::max();

// The default table; first admitting, usable rule wins. Most rules were
// measured on a 2-core host running up to 8 ranks, where the ranks
// outnumber the cores: then the total number of messages (2(n-1) for
// reduce_broadcast, about n log2 n for the butterfly) costs more than the
// number of rounds, and large values favour the tree too; from 64 KiB the
// same holds below 96 KiB at 4 ranks and below 128 KiB from 8. Those rules
// say crowding::crowded, and apply only to a job known to be crowded (every
// rank on one host, more of them than its CPUs: csp-launch on a laptop).
// Elsewhere (a core per rank, or a job over several hosts) fewer rounds
// win: the butterfly and dissemination, as MPICH chooses them; those rules
// were measured at two ranks only, the most this machine has a core for.
// To tune for another machine: measure, then set CSP_COLLECTIVES.
inline constexpr std::array<selection_rule, 56> default_rules{{
    // Ranks of one address space (a local communicator) meet on a shared
    // board: one barrier per call and no messages. 8 ranks as fibers on one
    // thread, allreduce of 8 B: see README, "Inside one host".
    {"broadcast", "shared_memory"},
    // Vectors among processes of one host: the host board. broadcast()'s
    // choice cannot see the size (only the root knows it; broadcast_into's
    // can, next rule), and a meeting waits for every rank where the tree
    // lets the root go: UCX on 2 cores,
    // bench/collectives_rank 2026-11-29, two runs, a vector of one double at
    // 2 / 4 / 8 ranks took 0.15 / 2.6-3.7 / 7.9-10.7 us against the tree's
    // 0.50 / 1.1-1.5 / 2.9-3.4; 1 MiB at 2 / 8 ranks 83-86 / 405-648 us
    // against the best message algorithm's 196-213 / 1,340-1,465 (OpenMPI's
    // shared memory 83-85 / 399-449). So the table takes it at 2 ranks;
    // with more, a program of large broadcasts uses broadcast_into or
    // forces it (CSP_COLLECTIVES=broadcast=host_memory).
    {"broadcast", "host_memory", 2, 0, link_level::host},
    // broadcast_into, whose size every rank knows: the board from 16 KiB at
    // the host level. UCX, bench/collectives_rank broadcast, 2026-11-29,
    // board against the binomial tree at 4 / 8 ranks: 8 B 2.7 / 6.4 against
    // 1.4 / 2.0 us, 4 KiB 3.8 / 8.7 against 2.6 / 2.9, 16 KiB 8.5 / 19.7
    // against 10.1 / 29.2, 64 KiB 15.7 / 28.8 against 61 / 90, 1 MiB 193 /
    // 254 against 675 / 1,237.
    {"broadcast", "host_memory", any_size, 16 * 1024, link_level::host},
    {"broadcast", "flat", 4},
    {"broadcast", "binomial"},
    {"reduce", "shared_memory"},
    // Processes of one host: the host board (bench/collectives_rank over
    // UCX, 2026-11-29, one run; 8 B / 64 KiB / 1 MiB): 0.19 / 11.2 / 98 us
    // at 2 ranks, 3.7 / 24.7 / 202 at 4, 6.5 / 42.6 / 674 at 8, against the
    // best message algorithm's 0.53 / 16.8 / 205, 1.3 / 46.8 / 490, 6.4 /
    // 74.8 / 1,680 (OpenMPI's shared memory: 0.13 / 8.0 / 104, 0.35 / 24.6 /
    // 339, 0.80 / 62.6 / 2,948). A meeting waits for every rank, where a
    // tree lets the leaves go: below 64 KiB beyond 2 ranks, the tree with
    // its children received at once wins (two runs, 1 / 4 / 16 KiB: at 4
    // ranks binomial_parallel 1.3-2.6 / 2.6-4.7 / 8.2-9.0 us, host_memory
    // 3.1-4.4 / 4.1-5.4 / 12.6-13.3, arrival 2.8-5.1 / 5.8-10.0 /
    // 23.9-40.3; at 8 ranks 4.0-4.9 / 8.2-8.8 / 33.8-37.8, 8.6-9.4 /
    // 8.9-10.7 / 28.5-34.3, 7.7-8.2 / 13.2-17.2 / 60.4-79.4), also for ops
    // that commute, where a network takes arrival.
    {"reduce", "host_memory", 2, 0, link_level::host},
    {"reduce", "host_memory", any_size, 64 * 1024, link_level::host},
    {"reduce", "binomial_parallel", any_size, 0, link_level::host},
    {"reduce", "flat_in_order", 2},
    // Levels of its own (a hybrid job, as allreduce's below): from 64 KiB,
    // where a flat reduce takes the chain, whose every hop waits for the
    // one before. 2 processes x 4 fibers over TCP (collectives_rank hybrid
    // 4 rooted, three runs 2026-12-07), root 7 (root 0's loops came first
    // at each size and paid for the heap's growth): at 64 KiB 35-38 us
    // against the chain's 234-262; at 1 MiB 931-1,041 against the
    // pipeline's 799-965, so from there the flat rules stay; at 8 B
    // 1.4-2.3 against arrival's 1.0-1.2.
    {"reduce", "two_levels", any_size, 64 * 1024, link_level::any, 1 << 20},
    // Vectors of 1 MiB and more with an element-wise op: the pipeline. Over
    // TCP (collectives_rank net beside mpi_collectives, 2026-11-27, one run)
    // 943 / 2,606 us at 4 / 8 ranks against chain's 1,157 / 3,107 and
    // binomial_parallel's 1,148 / 3,221 (OpenMPI 1,016 / 15,866); over UCX
    // on one host 605 / 1,216 against chain's 2,699 / 3,090 (binomial_parallel
    // 544 / 1,142). At 64 KiB it was no better than the trees.
    {"reduce", "pipeline", any_size, 1 << 20},
    {"reduce", "chain", any_size, 64 * 1024},
    {"reduce", "arrival"},
    {"reduce", "binomial_parallel"},
    {"allreduce", "shared_memory"},
    // Processes of one host over shared memory: one meeting on the host
    // board below 16 KiB (host_board.hpp), chunks on a large board above
    // (vectors with an element-wise op; other values take the butterfly).
    // UCX, 2 / 4 / 8 ranks on 2 cores, bench/collectives_rank 2026-11-29:
    // at 64 KiB 12.7-13.0 / 29 / 54-150 us against Rabenseifner's 19 / 88 /
    // 334-347 and the butterfly's 33 / 89 / 438-532 (OpenMPI's shared
    // memory 20-24 / 69 / 179-215); at 1 MiB 117-120 / 293 / 740-1,074
    // against Rabenseifner's 179 / 502 / 3,231-3,526 in the same runs
    // (OpenMPI 140-155 / 451 / 1,036-1,573). At 8 B: 0.25 us a hop makes
    // the butterfly's log2 n rounds beat the tree's 2 log2 n even with more
    // ranks than cores, but one meeting beats both (7.0 against 20.9 us at
    // 8 ranks, 2026-11-27).
    {"allreduce", "host_memory", any_size, 0, link_level::host},
    // A communicator with levels of its own (a hybrid job: two_levels.hpp):
    // each node's ranks fold first, one leader per node crosses the
    // network. 2 processes x 4 fibers over TCP (collectives_rank hybrid 4,
    // three quiet runs 2026-12-07): 8 B / 1 KiB / 16 KiB / 64 KiB /
    // 256 KiB took 13.2-13.9 / 14.0-14.4 / 22.7-28.9 / 56-60 / 197-205 us
    // against the flat table's choice (butterfly, then Rabenseifner's)
    // 32.5-33.1 / 34.2-36.4 / 46.8-49.3 / 104-105 / 311-320. At 1 MiB
    // they were close (890-909 against 952-984; with the machine busy,
    // 1,496-3,456 against 1,346-2,666): there every rank carrying a part
    // of Rabenseifner's across the network can beat one leader per node
    // carrying the whole, so from 1 MiB the flat rules stay.
    {"allreduce", "two_levels", any_size, 0, link_level::any, 1 << 20},
    // Vectors of 64 KiB and more with a built-in op: Rabenseifner's. Over
    // TCP (bench/collectives_vs_mpi, 2026-11-25, one run) at 64 KiB it took
    // 200 us at 4 ranks and 759 at 8, against the ring's 379 and 1,322 and
    // the tree's 2,407 at 8 (OpenMPI 276 and 1,060); at 1 MiB 14.4 and 20.1
    // ms against the ring's 28.6 and 50.1. (The ring had replaced the tree
    // from 1 MiB: 2.2-3.0 ms against 5.8 at 2 ranks, 22.0 against 27.1 at 8.)
    // Two ranks, up to the TCP reader's buffer: the butterfly's one
    // exchange of the whole value: as few messages as the tree (two), in
    // one round instead of two, crowded or not; from 64 KiB it beats
    // Rabenseifner's two exchanges of halves (received vectors below
    // 256 KiB are not copied out of the read buffer, net/frame_reader.hpp).
    // Over TCP (collectives_rank allreduce, 2026-12-01, three runs) at 64 KiB
    // 22.8-24.5 us against Rabenseifner's 25.6-27.4 (OpenMPI 29.2-32.2), at
    // 128 KiB 41-45 against 45-53; at 256 KiB 74-82 against 69-75, at
    // 512 KiB even. Below 64 KiB (TRANSPORT=tcp RANKS=2 bench/
    // host_allreduce_vs_mpi, medians of 6 pairs, 2026-12-06): 16 / 32 KiB
    // 22.5-25.0 / 23.5-29.5 us against the tree's 40.2-42.0 / 41.0-46.6
    // (OpenMPI 42.3-43.4 / 50.9-58.7); both ranks held to one CPU 28.5 /
    // 35.8 against 51.7 / 54.1, 8 B 23.8 against 46.8.
    {"allreduce", "butterfly", 2, 0, link_level::any, 256 * 1024},
    // Three and four ranks below 96 KiB: the butterfly's two exchanges of
    // the whole vector (8 messages at 4 ranks) beat Rabenseifner's four of
    // halves and quarters (16) when the ranks outnumber the cores. TCP, 4
    // ranks on 2 cores, host_allreduce_vs_mpi 2026-12-06, medians of 6-8
    // alternating pairs in five runs: at 64 KiB 189 / 162 / 228 / 234 /
    // 286 us against Rabenseifner's 238 / 167 / 246 / 252 / 269 (OpenMPI
    // 245 / 225 / 353 / 309 / 270); at 96 KiB 347 against 278, at 128 KiB
    // 418 against 324. Three ranks were not measured: they follow four,
    // both algorithms first folding the extra rank in.
    {"allreduce", "butterfly", 4, 64 * 1024, link_level::any, 96 * 1024, crowding::crowded},
    // Eight ranks and more, below 128 KiB: the tree's 2(n-1) whole messages
    // beat Rabenseifner's 2n log2 n pieces when the ranks outnumber the
    // cores (each piece waits for its partner to be scheduled). Over TCP
    // with 8 ranks on 2 cores (TRANSPORT=tcp bench/host_allreduce_vs_mpi,
    // medians of 6 alternating pairs, two runs 2026-12-06): at 64 KiB
    // reduce_broadcast 649 / 762 us against Rabenseifner's 758 / 932
    // (OpenMPI 792 / 955; medians of 8 pairs 2026-12-03: 0.74x OpenMPI
    // against 0.87x); at 128 KiB even (1,045 against 888), at 256 KiB
    // and 1 MiB Rabenseifner's (1,243 against 1,485; 3,210 against
    // 4,381). At 6 ranks Rabenseifner's led at 64 KiB (430 against 481 us,
    // the butterfly 468).
    {"allreduce", "rabenseifner", 7, 64 * 1024},
    {"allreduce", "reduce_broadcast", any_size, 64 * 1024, link_level::any, 128 * 1024, crowding::crowded},
    {"allreduce", "rabenseifner", any_size, 64 * 1024},
    // Up to four ranks below 128 KiB, whatever the op: the butterfly, also
    // when crowded (4 ranks on 2 cores, TCP, medians of 6 pairs 2026-12-06:
    // 16 / 32 KiB 74 / 113 us against the tree's 125 / 122; at 8 ranks the
    // two were even, 301 / 385 against 314 / 361; 64-128 KiB above).
    {"allreduce", "butterfly", 4, 0, link_level::any, 128 * 1024},
    // More ranks, crowded: the tree's 2(n-1) messages at every size
    // Rabenseifner's does not take.
    {"allreduce", "reduce_broadcast", any_size, 0, link_level::any, no_limit, crowding::crowded},
    // A core per rank (or a job not known to be crowded): the butterfly's
    // log2 n rounds, each rank busy in every one, where the tree takes
    // 2 log2 n with most ranks idle. MPICH makes the same choice (recursive
    // doubling) below Rabenseifner's sizes. Not measured beyond two ranks:
    // this 2-core machine has no core per rank for more.
    {"allreduce", "butterfly"},
    {"barrier", "shared_memory"},
    {"barrier", "host_memory", any_size, 0, link_level::host},
    // Levels of its own: each node's ranks report to their leader first
    // (the same runs: 12.5-12.8 us against dissemination's 43.2-44.0).
    {"barrier", "two_levels"},
    // Over TCP on this 2-core host (collectives_rank net beside OpenMPI's
    // MPI_Barrier, 2026-11-27, two runs): at 2 ranks dissemination's one
    // crossing took 4.8 us against a round trip's 8.7-9.1 (OpenMPI 7.1-7.3);
    // at 4 ranks the algorithms were within the noise (27-36 us); at 8
    // flat_parallel's 2(n-1) messages took 71-81 us against binomial's
    // 102-116 (its 2 log2 n rounds cost more than they save when 8
    // processes share 2 cores) and dissemination's 105-131 (OpenMPI 114-129).
    {"barrier", "dissemination", 2},
    {"barrier", "flat_parallel", 8, 0, link_level::any, no_limit, crowding::crowded},
    {"barrier", "binomial", any_size, 0, link_level::any, no_limit, crowding::crowded},
    // A core per rank: dissemination's log2 n rounds of one message each,
    // MPICH's default at every size (measured here at two ranks only).
    {"barrier", "dissemination"},
    // Levels of its own (a hybrid job): one message per node across the
    // network. The size is each rank's own, so the rule cannot see it, and
    // takes the levels at every size: the same runs, root 7, 64 KiB /
    // 1 MiB 115-122 / 2,538-3,108 us against the flat parallel gather's
    // 1,067-1,131 / 7,581-8,413, where 8 B / 1 KiB lose a few
    // microseconds (7.2-7.6 / 7.6-8.9 against 5.1-5.6 / 2.7-4.4).
    {"gather", "two_levels"},
    {"gather", "parallel"},
    // Processes of one host: the host board at every size and group size
    // (bench/collectives_rank over UCX, 2026-11-29, one run: 8 B / 64 KiB /
    // 1 MiB per rank took 0.20 / 11.2 / 111 us at 2 ranks, 3.9 / 44 /
    // 1,974 at 4, 7.9 / 120 / 6,904 at 8, against the ring's 1.1 / 23.9 /
    // 168, 13.4 / 131 / 3,586, 56.7 / 508 / 10,698 and OpenMPI's shared
    // memory at 64 KiB and 1 MiB 11.4 / 129, 267 / 2,367, 234 / 9,457).
    {"allgather", "host_memory", any_size, 0, link_level::host},
    // Levels of its own (a hybrid job), parts below 64 KiB: gathered in
    // each node, exchanged by the leaders, handed out (the same runs: 8 B
    // / 1 KiB 26.4-26.9 / 33.9-34.3 us against gather_broadcast's
    // 41.1-43.6 / 42.7-43.9). From 64 KiB the ring's steps, most of them
    // inside a node, beat one leader carrying every part (146-153 against
    // 409-451 us at 64 KiB, 2,891-3,301 against 11,473-13,495 at 1 MiB).
    {"allgather", "two_levels", any_size, 0, link_level::any, 64 * 1024},
    // Parts of 64 KiB and more (each rank's): the ring, n-1 steps in which
    // every rank sends one part to its neighbour, where gather_broadcast
    // sends all n parts through rank 0 and back out. Over TCP
    // (bench/collectives_vs_mpi, 2026-11-25, one run) the ring took 0.40 /
    // 0.83 / 0.82 of gather_broadcast's time at 64 KiB and 0.45 / 0.66 /
    // 0.65 at 1 MiB, at 2 / 4 / 8 ranks; over UCX on one host 0.44 and
    // 0.34 at 2 ranks. Smaller parts were not measured.
    {"allgather", "ring", any_size, 64 * 1024},
    {"allgather", "gather_broadcast"},
    {"scatter", "sequential"},
    {"alltoall", "parallel"},
    // Processes of one host: the host board from 64 KiB, the chain below.
    // UCX on 2 cores, collectives_rank scan (2026-12-02, up to five runs), sums of
    // 8 B / 64 KiB / 1 MiB at 8 ranks: the board 5.1-8.8 / 87-136 /
    // 1,862-2,087 us, the chain 2.2-2.8 / 102-205 / 2,498-2,898,
    // recursive doubling 13.3-29.8 / 352-598 / 6,425-7,858; at 4 ranks the
    // board 2.8-2.9 / 32 / 587-761, the chain 1.0-1.2 / 52-68 /
    // 1,193-1,358 (OpenMPI's shared memory: at 8 ranks 0.55-0.89 / 44-64 /
    // 921-1,210, at 4 0.24-0.46 / 22-24 / 382-581: its chain, which a loop
    // of scans keeps full, beats a meeting of every rank per call). At 2
    // ranks (a core each) the board wins at every size: 8 B in 0.15-0.19 us
    // against the chain's 0.20-0.33 (three runs, 2026-12-02, after small
    // UCX frames refused by a full queue were offered again; 0.40-0.72
    // before), where at 3 ranks the chain takes 0.45-1.26 and the board
    // 1.64-2.20. Two ranks sharing one core (taskset) reverse it: the
    // board 1.5-1.9, the chain 0.56-1.07 (a meeting needs both to run each
    // call, a chain runs ahead): so the board's rule at 2 ranks holds only
    // where the job is not crowded, and two ranks on one CPU take the chain.
    {"scan", "host_memory", 2, 0, link_level::host, no_limit, crowding::uncrowded},
    {"scan", "host_memory", any_size, 64 * 1024, link_level::host},
    {"scan", "pipeline", any_size, 0, link_level::host},
    {"scan", "pipeline", 4},
    {"scan", "recursive_doubling"},
    {"exscan", "host_memory", 2, 0, link_level::host, no_limit, crowding::uncrowded},
    {"exscan", "host_memory", any_size, 64 * 1024, link_level::host},
    {"exscan", "pipeline", any_size, 0, link_level::host},
    {"exscan", "pipeline", 4},
    {"exscan", "recursive_doubling"},
    // The ring moves about (n-1)/n of the vector through each rank where
    // reduce_then_scatter moves all of it through rank 0 and back. Measured
    // over TCP (2026-11-25): at 1 MiB the ring takes 0.84 / 0.39 / 0.45 of
    // the tree's time at 2 / 4 / 8 ranks; at 64 KiB 0.51 and 0.80 at 2 and
    // 4 ranks, but 1.12 at 8.
    // Processes of one host: the host board at every size and group size
    // (any op: each rank folds its block of every part in rank order).
    // UCX on 2 cores, collectives_rank net beside mpi_collectives
    // (2026-12-02, one run), 64 KiB / 1 MiB at 2 / 4 / 8 ranks: 7.0 / 182,
    // 17.8 / 459, 45.7 / 988 us against the best message algorithm's 9.4 /
    // 229, 39.9 / 709, 93 / 1,819 (OpenMPI's shared memory 12.4 / 606, 35.7
    // / 1,512, 72.5 / 3,037). Small vectors: one meeting, as allreduce's.
    {"reduce_scatter", "host_memory", any_size, 0, link_level::host},
    {"reduce_scatter", "ring", 4, 64 * 1024},
    {"reduce_scatter", "ring", any_size, 1 << 20},
    {"reduce_scatter", "reduce_then_scatter"},
    {"put_get", "requests"},
}};

namespace detail {
// Each default rule's algorithm, as its index in registry::every_algorithm,
// found once at compile time: a call's choice compares no algorithm names.
inline constexpr auto rule_algorithms = [] {
    std::array<std::size_t, default_rules.size()> out{};
    for (std::size_t i = 0; i < default_rules.size(); ++i) {
        out[i] = registry::every_algorithm.size();
        for (std::size_t k = 0; k < registry::every_algorithm.size(); ++k)
            if (registry::every_algorithm[k].collective == default_rules[i].collective &&
                registry::every_algorithm[k].name == default_rules[i].algorithm)
                out[i] = k;
    }
    return out;
}();
static_assert(std::all_of(rule_algorithms.begin(), rule_algorithms.end(),
                          [](std::size_t k) { return k < registry::every_algorithm.size(); }),
              "a default selection rule names an algorithm the registry does not list");

// The rules of one collective: default_rules[first, last).
struct rule_range {
    std::size_t first = 0;
    std::size_t last = 0;
};
constexpr rule_range rules_of(std::string_view collective) {
    rule_range r{default_rules.size(), default_rules.size()};
    for (std::size_t i = 0; i < default_rules.size(); ++i) {
        if (default_rules[i].collective != collective) continue;
        if (r.first == default_rules.size()) r.first = i;
        r.last = i + 1;
    }
    return r;
}
// The table lists each collective's rules together, so a range holds them all
// and nothing else.
static_assert([] {
    for (const auto& rule : default_rules) {
        const rule_range r = rules_of(rule.collective);
        for (std::size_t i = r.first; i < r.last; ++i)
            if (default_rules[i].collective != rule.collective) return false;
    }
    return true;
}(), "the default selection rules of one collective must be listed together");
}  // namespace detail

class selection {
public:
    // What a call asks for.
    struct request {
        std::string_view collective;
        int ranks;
        std::size_t bytes;
        bool commuting_op;
        bool elementwise = false;  // a vector, and an op that acts element by element
        bool shared_memory = false;  // the ranks share one address space (shared_board.hpp)
        link_level level = link_level::network;  // where the messages go (link_level_of)
        bool crowded = false;  // the job's ranks outnumber their CPUs (crowded_of)
        bool two_levels = false;  // the communicator has levels of its own (two_levels.hpp)
    };

    static selection& global();

    static std::optional<algorithm_info> find(std::string_view collective, std::string_view name);
    static bool usable(const algorithm_info& a, const request& r) {
        return (r.commuting_op || !a.needs_commuting_op) && (r.elementwise || !a.needs_elementwise) &&
               (r.shared_memory || !a.needs_shared_memory) && (r.level == link_level::host || !a.needs_host_level) &&
               (r.two_levels || !a.needs_two_levels);
    }

    // "collective=algorithm,..." (the CSP_COLLECTIVES syntax); throws
    // usage_error naming a malformed item or an unknown name.
    static std::map<std::string, std::string, std::less<>> parse_overrides(std::string_view spec);

    // Forces `algorithm` for every later call of `collective` in this process.
    void force(std::string_view collective, std::string_view algorithm);
    void unforce(std::string_view collective);
    void unforce_all();

    std::string_view choose(const request& r) const { return choose(r, detail::rules_of(r.collective)); }

    // Called by every rank on every collective call (dispatch.hpp, with the
    // collective's rules found at compile time): without overrides it takes
    // no lock, allocates nothing and compares no names.
    std::string_view choose(const request& r, detail::rule_range rules) const {
        if (any_forced_.load(std::memory_order_acquire))
            if (auto a = forced_choice(r)) return *a;  // else fall back to the table
        for (std::size_t i = rules.first; i < rules.last; ++i) {
            const selection_rule& rule = default_rules[i];
            if (r.ranks > rule.max_ranks || r.bytes < rule.min_bytes || r.bytes >= rule.below_bytes) continue;
            if (rule.level != link_level::any && rule.level != r.level) continue;
            if (rule.crowd != crowding::any && (rule.crowd == crowding::crowded) != r.crowded) continue;
            const algorithm_info& a = registry::every_algorithm[detail::rule_algorithms[i]];
            if (usable(a, r)) return a.name;
        }
        no_algorithm(r);
    }

    // The smallest size at which r's choice differs from its choice at a
    // size of 0 (no_limit if none does): every size below it chooses alike.
    // Depends only on what r holds besides its size, so it is alike at every
    // rank even where their sizes differ (dispatch.hpp relies on it).
    std::size_t first_change(request r, detail::rule_range rules) const {
        r.bytes = 0;
        const std::string_view smallest = choose(r, rules);
        std::size_t first = no_limit;
        for (std::size_t i = rules.first; i < rules.last; ++i)
            for (const std::size_t bound : {default_rules[i].min_bytes, default_rules[i].below_bytes}) {
                if (bound == 0 || bound >= first) continue;
                r.bytes = bound;
                if (choose(r, rules) != smallest) first = bound;
            }
        return first;
    }
    // Whether r's choice could differ with its size alone.
    bool depends_on_bytes(const request& r, detail::rule_range rules) const {
        return first_change(r, rules) != no_limit;
    }

    // The table and the overrides in force.
    void print_table(std::ostream& os) const;

private:
    explicit selection(std::map<std::string, std::string, std::less<>> forced);

    // The forced algorithm for r's collective, if one is forced and usable.
    std::optional<std::string_view> forced_choice(const request& r) const;
    [[noreturn]] static void no_algorithm(const request& r);
    static void validate(std::string_view collective, std::string_view algorithm);

    // The overrides CSP_COLLECTIVES asks for (csp/config.hpp).
    static std::map<std::string, std::string, std::less<>> from_environment();

    mutable std::mutex lock_;
    std::map<std::string, std::string, std::less<>> forced_;  // under lock_
    std::atomic<bool> any_forced_;                            // forced_ is not empty
};

namespace detail {

// Where `comm`'s messages go: its own answer (link_level()), else network.
template <class C>
link_level link_level_of(const C& comm) {
    if constexpr (requires { comm.link_level(); }) return comm.link_level();
    else return link_level::network;
}

// Whether `comm`'s job is known to have more ranks than CPUs: its own
// answer (job_oversubscribed()), else no.
template <class C>
bool crowded_of(const C& comm) {
    if constexpr (requires { comm.job_oversubscribed(); }) return comm.job_oversubscribed();
    else return false;
}

template <class T> struct is_std_vector : std::false_type {};
template <class U, class A> struct is_std_vector<std::vector<U, A>> : std::true_type {};

// Bytes a value puts on the wire, as far as the table needs to know.
template <class T>
std::size_t byte_size(const T& v) {
    if constexpr (is_std_vector<T>::value) {
        if constexpr (std::is_trivially_copyable_v<typename T::value_type>)
            return v.size() * sizeof(typename T::value_type);
        else return v.size();
    } else if constexpr (std::is_same_v<T, std::string>) {
        return v.size();
    } else {
        return sizeof(T);
    }
}

}  // namespace detail
}  // namespace csp::collectives
