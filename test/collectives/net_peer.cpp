// One rank of the network grid: run by csp-launch as one OS process per
// rank. Prints what went wrong and exits 1, or prints "grid ok" and exits 0.
// With the argument "allreduce-forever" it runs allreduces until it is
// killed (the departure tests kill it). With "shared" it checks shared
// reduction variables instead of the grid and prints "shared ok";
// "shared-forever" updates and reads one until it is killed. "choices"
// prints what the selection table ran here for a barrier and an allreduce
// of 32 KiB: "choices <rank> crowded=<0|1> <algorithm> <algorithm>".
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <array>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <span>
#include <string>

#include "collectives/hierarchy.hpp"
#include "collectives/hybrid_communicator.hpp"
#include "collectives/net_communicator.hpp"
#include "collectives/shared.hpp"
#include "collectives/trace.hpp"
#include "csp/runtime.hpp"
#include "grid.hpp"

namespace {

namespace cc = csp::collectives;

// Shared variables over the network against sequential references: the
// variance (two sums fused per batch), every built-in op at once, vectors,
// and a mismatched pending set reported at every rank.
template <class C>
std::vector<std::string> check_shared(C& comm) {
    std::vector<std::string> wrong;
    auto expect = [&](bool ok, const std::string& what) {
        if (!ok) wrong.push_back("rank " + std::to_string(comm.rank()) + ": " + what);
    };
    const int n = comm.size(), me = comm.rank();
    cc::shared_group g(comm);
    constexpr int batches = 20, m = 50;
    for (int i = 0; i < batches; ++i) {
        cc::shared<double> s1(g), s2(g);
        for (int j = me; j < m; j += n) {
            const double x = i + j * 0.5;
            s1 += x;
            s2 += x * x;
        }
        const double var = (s2 - s1 * s1 / m) / (m - 1);
        double r1 = 0, r2 = 0;
        for (int j = 0; j < m; ++j) r1 += i + j * 0.5, r2 += (i + j * 0.5) * (i + j * 0.5);
        expect(std::abs(var - (r2 - r1 * r1 / m) / (m - 1)) < 1e-9, "variance of batch " + std::to_string(i));
    }
    expect(g.statistics().reductions == batches, "one reduction per batch");

    cc::shared<long> sum(g, 5);
    cc::shared<long, cc::product> prod(g, 1);
    cc::shared<long, cc::minimum> lo(g, 1000);
    cc::shared<long, cc::maximum> hi(g, -1000);
    cc::shared<std::uint64_t, cc::bit_or> bits(g);
    cc::shared<std::vector<double>> vec(g, std::vector<double>(3, 1.0));
    sum += me;
    prod *= me + 1;
    lo.contribute(10 - me);
    hi.contribute(me * me);
    bits |= std::uint64_t{1} << me;
    vec += std::vector<double>{double(me), 1.0, -double(me)};
    long fact = 1;
    for (int r = 1; r <= n; ++r) fact *= r;
    expect(sum.get() == 5 + n * (n - 1) / 2, "sum");
    expect(prod.get() == fact, "product");
    expect(lo.get() == 10 - (n - 1), "minimum");
    expect(hi.get() == (n - 1) * (n - 1), "maximum");
    expect(bits.get() == (std::uint64_t{1} << n) - 1, "bit_or");
    expect(vec.get() == std::vector<double>{1.0 + n * (n - 1) / 2, 1.0 + n, 1.0 - n * (n - 1) / 2}, "vector");
    expect(g.statistics().reductions == batches + 1, "the six variables in one reduction");

    if (n > 1) {
        cc::shared<double> x(g, 0.0, "x"), y(g, 0.0, "y");
        if (me == n - 1) y += 1;
        else x += 1;
        try {
            g.flush();
            expect(false, "a mismatched pending set was not reported");
        } catch (const csp::usage_error& e) {
            const std::string what = e.what();
            expect(what.find("{x: sum<double> (1 words)}") != std::string::npos &&
                       what.find("{y: sum<double> (1 words)}") != std::string::npos,
                   "mismatch message: " + what);
        }
    }
    return wrong;
}

// A value that does not commute: the digits of the ranks that contributed,
// in the order they were folded.
struct digits {
    long value = 0, count = 0;
};
// Element by element, the decimal digits of acc followed by those of b
// (values without a zero digit): associative, and the result shows the order.
struct concat_digits {
    static constexpr bool commutes = false;
    static constexpr bool elementwise = true;
    static long concat(long a, long b) {
        for (long d = b; d > 0; d /= 10) a *= 10;
        return a + b;
    }
    std::vector<long> operator()(const std::vector<long>& a, const std::vector<long>& b) const {
        std::vector<long> out(a);
        fold_into(out, b.begin());
        return out;
    }
    template <class V, class It>
    void fold_into(V& acc, It b) const {
        for (std::size_t i = 0; i < acc.size(); ++i, ++b) acc[i] = concat(acc[i], *b);
    }
    template <class V, class It>
    void fold_before(V& acc, It b) const {
        for (std::size_t i = 0; i < acc.size(); ++i, ++b) acc[i] = concat(*b, acc[i]);
    }
};

struct append_digits {
    digits operator()(const digits& a, const digits& b) const {
        long scale = 1;
        for (long i = 0; i < b.count; ++i) scale *= 10;
        return {a.value * scale + b.value, a.count + b.count};
    }
};

// The host board (collectives/host_board.hpp) under csp-launch, every rank
// an OS process of this host: prints "host ok" or what went wrong.
//   host-board           results, orderings and errors (below)
//   host-board-lost      the last rank vanishes mid-loop (exits without
//                        closing its node): every other rank prints "lost: "
//                        and the peer error
//   host-board-lost-large  the same with vectors on the large board
//   host-board-leave     ranks leave the moment their last barrier is
//                        over, while another still sleeps in it
//   host-board-deadlock  the last rank never arrives: the launcher's
//                        job-wide deadlock report must end the job
//   host-board-plain-over-a-part  a plain value larger than a part (a
//                        16 KiB std::array), broadcast and gathered whole
// A plain value larger than a part is not on the board: every rank sees
// that the part does not hold it, and it passes by messages, every byte of
// it. Its own frame (16 KiB values, several copies deep), which only this
// mode's larger stacks hold.
template <class Expect>
[[gnu::noinline]] void plain_values_over_a_part(cc::net_communicator& comm, const Expect& expect) {
    const int n = comm.size(), me = comm.rank();
    using big = std::array<char, 16 * 1024>;
    static_assert(sizeof(big) > cc::host_board::part_capacity);
    const auto filled = [](int v) {
        big b{};
        for (std::size_t k = 0; k < b.size(); ++k) b[k] = char('a' + (v * 7 + int(k)) % 26);
        return b;
    };
    for (int root = 0; root < n; ++root)
        expect(cc::broadcast_host_memory(comm, me == root ? filled(root) : big{}, root) == filled(root),
               "a broadcast of a 16 KiB array from " + std::to_string(root));
    const auto all = cc::allgather_host_memory(comm, filled(me));
    for (int q = 0; q < n; ++q)
        expect(all.at(std::size_t(q)) == filled(q), "an allgather of 16 KiB arrays, rank " + std::to_string(q));
    expect(cc::allreduce_host_memory(comm, 1, cc::sum{}) == n, "a sum on the board after them");
    cc::barrier(comm);
}

// Hosts of two ranks as in host_groups_mode; rank 3 vanishes (no goodbye)
// in the middle of a loop of sums on its host's board. Its host mate fails
// with its error in the meeting it waits in. The ranks of host 0 have all
// their members: their loop (where one of them sleeps for a while every 50
// rounds, so that the other sleeps in the meeting and is woken by a
// message) completes with every sum right, and the barrier of the whole
// job after it fails with the lost peer's error.
int host_groups_lost_mode() {
    std::string lost;
    csp::run([&] {
        csp::net::node_options o = csp::net::node_options::from_environment();
        o.local_size = 2;
        csp::net::node self(o);
        cc::net_communicator comm(self);
        const int me = comm.rank();
        cc::hierarchy h(comm, "h" + std::to_string(me / 2));
        bool looped = false;
        try {
            for (int i = 0; i < 2000; ++i) {
                if (me == 3 && i == 300) std::_Exit(0);  // as if killed
                if (me == 0 && i % 50 == 7) csp::sleep_for(std::chrono::microseconds(1500));
                if (cc::allreduce(h.local(), long(me + i), cc::sum{}) != 2L * i + 2 * (me / 2 * 2) + 1)
                    throw std::runtime_error("a wrong sum in round " + std::to_string(i));
            }
            looped = true;
            cc::barrier(comm);
            lost = "nothing";
        } catch (const std::exception& e) {
            lost = (looped ? "after the loop: " : "in the loop: ") + std::string(e.what());
        }
    });
    std::cout << "outcome: " << lost << '\n';
    return 0;
}

// Hosts of two ranks each (the last may hold one) in a job that runs on
// one machine: each node is told its host holds two ranks (local_size), so
// the job's own level is the network, as on a cluster, and a hierarchy by
// the host names "h<rank / 2>" marks its host groups. The host groups meet
// on boards of their own exactly when the links go through shared memory
// (UCX); every collective and every hierarchical one counts its values.
// ("split-groups": a plain split of a job on one host instead, whose
// groups share the host's memory as the job does.)
int host_groups_mode(bool split_only) {
    std::vector<std::string> wrong;
    if (split_only) {
        csp::run([&] {
            csp::net::node self;
            {
                cc::net_communicator comm(self);
                const int me = comm.rank();
                auto half = *cc::split(comm, me % 2, me);
                const bool shared = half.size() > 1 && self.shares_host_memory();
                const cc::host_board* board = half.board_on_host({}, half.next_tag());
                if ((board != nullptr) != shared)
                    wrong.push_back("rank " + std::to_string(me) + ": a split group's board iff the job shares memory");
                for (auto& w : grid::check_all(half)) wrong.push_back("a split group: " + w);
                cc::barrier(comm);
            }
            self.close();
        });
    } else csp::run([&] {
        csp::net::node_options o = csp::net::node_options::from_environment();
        o.local_size = 2;
        csp::net::node self(o);
        {
            cc::net_communicator comm(self);
            const int n = comm.size(), me = comm.rank();
            auto expect = [&](bool ok, const std::string& what) {
                if (!ok) wrong.push_back("rank " + std::to_string(me) + ": " + what);
            };
            expect(comm.link_level() == (n <= 2 && self.shares_host_memory() ? cc::link_level::host
                                                                               : cc::link_level::network),
                   "the job's level");
            cc::hierarchy h(comm, "h" + std::to_string(me / 2));
            auto& local = h.local();
            const bool shared = local.size() > 1 && self.host_links_share_memory();
            expect(local.link_level() == (shared ? cc::link_level::host : cc::link_level::network),
                   "the host group's level");
            cc::host_board* board = local.board_on_host({}, local.next_tag());
            expect((board != nullptr) == shared, "a board for the host's ranks iff its links share memory");
            if (h.leaders() != nullptr && n > 2)
                expect(h.leaders()->link_level() == cc::link_level::network, "the leaders' level");
            const auto meetings_before = board ? board->meetings() : 0;
            for (auto& w : grid::check_all(local)) wrong.push_back("inside the host: " + w);
            if (board) expect(board->meetings() > meetings_before, "meetings on the host group's board");

            // Hierarchical sums that change each round, a vector over the
            // large board's part, a broadcast from every root, an allgather.
            constexpr int rounds = 300;
            for (int i = 0; i < rounds; ++i) {
                const long got = cc::hierarchical::allreduce(h, long(me) * rounds + i, cc::sum{});
                const long want = long(n) * (n - 1) / 2 * rounds + long(n) * i;
                if (got != want) {
                    expect(false, "hierarchical sum, round " + std::to_string(i) + ": " + std::to_string(got) +
                                      " for " + std::to_string(want));
                    break;
                }
            }
            const std::size_t big = cc::host_board::large_shape(2).part_capacity / sizeof(long) * 2 + 5;
            std::vector<long> mine(big);
            for (std::size_t k = 0; k < big; ++k) mine[k] = long(me) * 7 + long(k);
            const auto sum = cc::hierarchical::allreduce(h, mine, cc::sum{});
            bool right = sum.size() == big;
            for (std::size_t k = 0; right && k < big; ++k)
                right = sum[k] == long(n) * (n - 1) / 2 * 7 + long(n) * long(k);
            expect(right, "a hierarchical sum of " + std::to_string(big) + " longs");
            for (int root = 0; root < n; ++root) {
                const auto got = cc::hierarchical::broadcast(h, me == root ? mine : std::vector<long>{}, root);
                expect(got.size() == big && got[1] == long(root) * 7 + 1, "a hierarchical broadcast from " +
                                                                                std::to_string(root));
            }
            const auto all = cc::hierarchical::allgather(h, me * 3);
            bool ordered = all.size() == static_cast<std::size_t>(n);
            for (int q = 0; ordered && q < n; ++q) ordered = all[static_cast<std::size_t>(q)] == q * 3;
            expect(ordered, "a hierarchical allgather in rank order");
            cc::hierarchical::local_barrier(h);
            cc::hierarchical::barrier(h);
            if (board) expect(board->wakes() <= board->meetings(), "no more wakes than meetings");
            cc::barrier(comm);
        }
        self.close();
    });
    for (const auto& w : wrong) std::cerr << w << '\n';
    std::cout << (wrong.empty() ? "groups ok\n" : "groups FAILED\n");
    return wrong.empty() ? 0 : 1;
}

int host_board_mode(const std::string& mode) {
    std::vector<std::string> wrong;
    std::string lost;
    // Values of 16 KiB on the stack, a few copies deep: more than a
    // process's default 64 KiB.
    csp::runtime_options options;
    if (mode == "host-board-plain-over-a-part") options.stack_size = 1 << 20;
    csp::run([&] {
        csp::net::node self;
        {
            cc::net_communicator comm(self);
            const int n = comm.size(), me = comm.rank();
            auto expect = [&](bool ok, const std::string& what) {
                if (!ok) wrong.push_back("rank " + std::to_string(me) + ": " + what);
            };
            if (mode == "host-board-deadlock") {
                expect(cc::allreduce_host_memory(comm, 1, cc::sum{}) == n, "the first sum");
                if (me == n - 1) (void)self.open(7).receive();
                (void)cc::allreduce_host_memory(comm, 1, cc::sum{});
                return;
            }
            if (mode == "host-board-plain-over-a-part") {
                plain_values_over_a_part(comm, expect);
                return;
            }
            if (mode == "host-board-leave") {
                // Rank 1 comes to the last barrier first and sleeps; the
                // others come later, rank 0 leaves as soon as it is through.
                expect(cc::allreduce_host_memory(comm, 1, cc::sum{}) == n, "the first sum");
                if (me != 1) csp::sleep_for(std::chrono::microseconds(me == n - 1 ? 2000 : 1000));
                cc::barrier_host_memory(comm);
                return;
            }
            if (mode == "host-board-lost-scatter") {
                // reduce_scatter of a vector in three slices on the large board.
                const std::size_t each = cc::host_board::large_shape(n).part_capacity / sizeof(long) / n * 2 + 1;
                const std::vector<std::size_t> counts(static_cast<std::size_t>(n), each);
                try {
                    for (int i = 0;; ++i) {
                        if (me == n - 1 && i == 30) std::_Exit(0);  // no goodbye: as if killed
                        const auto got =
                            cc::reduce_scatter_host_memory(comm, std::vector<long>(each * n, 1), counts, cc::sum{});
                        expect(got == std::vector<long>(each, n), "blocks before the loss");
                    }
                } catch (const csp::net::peer_error& e) {
                    lost = e.what();
                }
                return;
            }
            if (mode == "host-board-lost" || mode == "host-board-lost-large") {
                // Large: vectors of two chunks on the large board.
                const std::size_t length =
                    mode == "host-board-lost" ? 1 : cc::host_board::large_shape(n).part_capacity / sizeof(long) + 3;
                try {
                    for (int i = 0;; ++i) {
                        if (me == n - 1 && i == (length == 1 ? 300 : 30)) std::_Exit(0);  // no goodbye: as if killed
                        if (length == 1) {
                            expect(cc::allreduce_host_memory(comm, 1L, cc::sum{}) == n, "sum before the loss");
                        } else {
                            const auto got = cc::allreduce_host_memory(comm, std::vector<long>(length, 1), cc::sum{});
                            expect(got == std::vector<long>(length, n), "sum before the loss");
                        }
                    }
                } catch (const csp::net::peer_error& e) {
                    lost = e.what();
                }
                return;
            }
            // The board is there exactly when the ranks share the host's memory.
            const cc::tag probe = comm.next_tag();
            const bool on_board = comm.board_on_host({}, probe) != nullptr;
            expect(on_board == self.shares_host_memory(), "a host board iff the ranks share the host's memory");
            // Every result counted: sums of values that change each round,
            // with one rank late (asleep for a while) every 50 rounds so
            // that the others go to sleep and are woken.
            constexpr int rounds = 2000;
            for (int i = 0; i < rounds; ++i) {
                if (i % 50 == 7 && me == (i / 50) % n) csp::sleep_for(std::chrono::microseconds(300 + 100 * me));
                const long got = cc::allreduce_host_memory(comm, long(me) * rounds + i, cc::sum{});
                const long want = long(n) * (n - 1) / 2 * rounds + long(n) * i;
                if (got != want) {
                    expect(false,
                           "round " + std::to_string(i) + ": " + std::to_string(got) + " for " + std::to_string(want));
                    break;
                }
            }
            // Rank order for an op that does not commute, and vectors.
            const digits d = cc::allreduce_host_memory(comm, digits{me + 1, 1}, append_digits{});
            long want_digits = 0;
            for (int q = 0; q < n; ++q) want_digits = want_digits * 10 + q + 1;
            expect(d.value == want_digits && d.count == n, "the digits in rank order: " + std::to_string(d.value));
            std::vector<double> v(17);
            for (std::size_t k = 0; k < v.size(); ++k) v[k] = me * 100.0 + double(k);
            const auto sum = cc::allreduce_host_memory(comm, v, cc::sum{});
            bool vector_ok = sum.size() == v.size();
            for (std::size_t k = 0; vector_ok && k < v.size(); ++k)
                vector_ok = sum[k] == 100.0 * n * (n - 1) / 2 + double(n * k);
            expect(vector_ok, "a vector of 17 elements");
            // Larger than a part: on the large board (one chunk here).
            expect(cc::allreduce_host_memory(comm, std::vector<double>(5000, 1.0), cc::sum{}) ==
                       std::vector<double>(5000, double(n)),
                   "a vector larger than a part");
            // Three chunks and a bit, every element checked; and twice more,
            // so that each of the large board's three sets is written again.
            const std::size_t chunk = cc::host_board::large_shape(n).part_capacity / sizeof(double);
            for (int round = 0; round < 3; ++round) {
                std::vector<double> big(3 * chunk + 123);
                for (std::size_t k = 0; k < big.size(); ++k) big[k] = me * 1000.0 + double(k % 1000) + round;
                const auto got = cc::allreduce_host_memory(comm, big, cc::sum{});
                std::size_t bad = got.size() == big.size() ? got.size() : 0;
                for (std::size_t k = 0; bad == got.size() && k < got.size(); ++k)
                    if (got[k] != 1000.0 * n * (n - 1) / 2 + double(n) * (double(k % 1000) + round)) bad = k;
                expect(bad == got.size(), "a vector of 3 chunks and 123 elements, round " + std::to_string(round) +
                                              ": element " + std::to_string(bad) + " wrong");
            }
            // Rank order in every block of every chunk (an element-wise op
            // that does not commute).
            {
                const auto got = cc::allreduce_host_memory(comm, std::vector<long>(chunk + 7, me + 1), concat_digits{});
                long want = 0;
                for (int q = 0; q < n; ++q) want = want * 10 + q + 1;
                expect(got == std::vector<long>(chunk + 7, want), "the digits in rank order in every element");
            }
            // reduce_scatter on the boards: irregular blocks (rank q's is
            // (q % 3) * third + q elements, so some hold a few only) of a
            // vector three large parts and more long, in slices on the
            // large board, three times so that each of its sets is written
            // again; every element checked. Then rank order in every
            // element, in a vector that fits a part and in one that does not.
            // Slices on the large board: length / (part - n) of them, rounded up.
            std::uint64_t slice_meetings = 0;
            auto slices = [&](std::size_t length) { return (length + chunk - n - 1) / (chunk - n); };
            {
                const std::size_t third = chunk / 3;
                std::vector<std::size_t> counts;
                for (int q = 0; q < n; ++q)
                    counts.push_back(static_cast<std::size_t>(q % 3) * third + static_cast<std::size_t>(q));
                counts[0] += 3 * chunk + 5;
                std::size_t first = 0, length = 0;  // where my block starts; the vector's length
                for (int q = 0; q < n; ++q) {
                    if (q < me) first += counts[static_cast<std::size_t>(q)];
                    length += counts[static_cast<std::size_t>(q)];
                }
                for (int round = 0; round < 3; ++round) {
                    std::vector<double> v(length);
                    for (std::size_t k = 0; k < v.size(); ++k) v[k] = me * 1000.0 + double(k % 1000) + round;
                    const auto got = cc::reduce_scatter_host_memory(comm, v, counts, cc::sum{});
                    slice_meetings += slices(length);
                    std::size_t bad = got.size() == counts[static_cast<std::size_t>(me)] ? got.size() : 0;
                    for (std::size_t k = 0; bad == got.size() && k < got.size(); ++k)
                        if (got[k] != 1000.0 * n * (n - 1) / 2 + double(n) * (double((first + k) % 1000) + round))
                            bad = k;
                    expect(bad == got.size(), "reduce_scatter of " + std::to_string(length) + " elements, round " +
                                                  std::to_string(round) + ": element " + std::to_string(bad) +
                                                  " wrong");
                }
                for (const std::size_t each : {std::size_t{3}, chunk}) {
                    const std::vector<std::size_t> even(static_cast<std::size_t>(n), each);
                    const auto got = cc::reduce_scatter_host_memory(comm, std::vector<long>(each * n, me + 1), even,
                                                                    concat_digits{});
                    if (each == chunk) slice_meetings += slices(each * n);
                    long want = 0;
                    for (int q = 0; q < n; ++q) want = want * 10 + q + 1;
                    expect(got == std::vector<long>(each, want),
                           "reduce_scatter: the digits in rank order in blocks of " + std::to_string(each));
                }
            }
            // Broadcast on the boards from every root: a plain value, a
            // vector that fits a part, and one of three chunks and a bit
            // (the non-roots pass an empty vector).
            for (int root = 0; root < n; ++root) {
                expect(cc::broadcast_host_memory(comm, me == root ? 40.5 + root : -1.0, root) == 40.5 + root,
                       "broadcast of a double from " + std::to_string(root));
                std::vector<int> small(me == root ? 100 : 0);
                for (std::size_t k = 0; k < small.size(); ++k) small[k] = root * 1000 + int(k);
                std::vector<int> want_small(100);
                for (std::size_t k = 0; k < want_small.size(); ++k) want_small[k] = root * 1000 + int(k);
                expect(cc::broadcast_host_memory(comm, small, root) == want_small,
                       "broadcast of 100 ints from " + std::to_string(root));
                const std::size_t big_length = 3 * (cc::host_board::large_shape(n).part_capacity / sizeof(int)) + 11;
                std::vector<int> want_big(big_length);
                for (std::size_t k = 0; k < big_length; ++k) want_big[k] = int(k) * 7 + root;
                const auto got = cc::broadcast_host_memory(comm, me == root ? want_big : std::vector<int>{}, root);
                expect(got == want_big,
                       "broadcast of " + std::to_string(big_length) + " ints from " + std::to_string(root));
            }
            if (n > 1 && on_board) {
                try {
                    if (me == 0) (void)cc::broadcast_host_memory(comm, 1, 0);
                    else (void)cc::broadcast_host_memory(comm, 1.0, 0);
                    expect(false, "a broadcast of values of different types");
                } catch (const csp::usage_error& e) {
                    expect(std::string(e.what()).find("another type than the root's") != std::string::npos, e.what());
                }
                // Regression: ranks naming different roots read a part its
                // writer never filled. Now every rank throws alike, and the
                // stream goes on.
                const std::vector<int> buffer_in(3, me);
                for (int into = 0; into < 2; ++into) {
                    try {
                        if (into) {
                            std::vector<int> buffer = buffer_in;
                            (void)cc::broadcast_host_memory.into(comm, std::span(buffer), me == 1 ? 1 : 0,
                                                                 cc::stream{});
                        } else {
                            (void)cc::broadcast_host_memory(comm, 40.5 + me, me == 1 ? 1 : 0);
                        }
                        expect(false, "a broadcast whose ranks name different roots");
                    } catch (const csp::usage_error& e) {
                        expect(std::string(e.what()).find("the ranks name different roots (rank 0 names 0, rank 1 "
                                                          "names 1)") != std::string::npos,
                               e.what());
                    }
                }
                expect(cc::broadcast_host_memory(comm, 40.5 + me, 1) == 41.5, "a broadcast after the roots differed");
                try {  // a reduce on the board checks its root as well
                    (void)cc::reduce_host_memory(comm, me, cc::sum{}, me == 1 ? 1 : 0);
                    expect(false, "a reduce whose ranks name different roots");
                } catch (const csp::usage_error& e) {
                    expect(std::string(e.what()).find("reduce host_memory: the ranks name different roots (rank 0 "
                                                      "names 0, rank 1 names 1)") != std::string::npos,
                           e.what());
                }
                // And different ops, which folded the same parts differently.
                try {
                    if (me == 1) (void)cc::allreduce_host_memory(comm, me, cc::maximum{});
                    else (void)cc::allreduce_host_memory(comm, me, cc::sum{});
                    expect(false, "an allreduce whose ranks pass different ops");
                } catch (const csp::usage_error& e) {
                    expect(std::string(e.what()).find("allreduce host_memory: the ranks pass ops of different types "
                                                      "(rank 0's and rank 1's)") != std::string::npos,
                           e.what());
                }
                expect(cc::allreduce_host_memory(comm, 1, cc::sum{}) == n, "a sum after the ops differed");
                // Regression: ranks passing different block counts of one
                // length laid out a large vector's slices differently and
                // folded each other's elements into wrong blocks. Now every
                // rank throws alike, on a part or in slices, and the stream
                // goes on.
                for (const std::size_t each : {std::size_t{4}, chunk}) {
                    std::vector<std::size_t> counts(static_cast<std::size_t>(n), each);
                    if (me == 1) ++counts[0], --counts[1];
                    try {
                        (void)cc::reduce_scatter_host_memory(comm, std::vector<double>(each * n, 1.0), counts,
                                                             cc::sum{});
                        expect(false, "a reduce_scatter whose ranks pass different counts");
                    } catch (const csp::usage_error& e) {
                        expect(std::string(e.what()).find("reduce_scatter host_memory: the ranks pass different block "
                                                          "counts (rank 0's and rank 1's)") != std::string::npos,
                               e.what());
                    }
                }
                expect(cc::reduce_scatter_block(comm, std::vector<int>(static_cast<std::size_t>(n), 1), cc::sum{}) ==
                           std::vector<int>{n},
                       "a reduce_scatter after the counts differed");
            }
            // Two streams at once, each with its own large board: two
            // processes of every rank, each a loop of large allreduces.
            {
                std::vector<std::string> stream_wrong(2);
                auto loop = [&](std::uint32_t id) {
                    for (int i = 0; i < 4; ++i) {
                        std::vector<long> v(2 * chunk + 5, long(me) + id * 100 + i);
                        const auto got = cc::allreduce_host_memory(comm, v, cc::sum{}, cc::stream{id});
                        const long want = long(n) * (n - 1) / 2 + long(n) * (id * 100 + i);
                        if (got.size() != v.size() ||
                            std::any_of(got.begin(), got.end(), [&](long x) { return x != want; }))
                            stream_wrong[id - 1] = "stream " + std::to_string(id) + ", call " + std::to_string(i);
                    }
                };
                csp::par([&] { loop(1); }, [&] { loop(2); });
                for (const auto& w : stream_wrong)
                    if (!w.empty()) expect(false, "two streams at once: " + w + " wrong");
            }
            // Scan and exscan on the boards: a plain value in rank order;
            // vectors that fit a part, and of one and of several chunks on
            // the large board (the second twice), every element checked;
            // rank order in every element of a vector over a part.
            {
                auto digits_upto = [](int last) {
                    long v = 0;
                    for (int q = 0; q <= last; ++q) v = v * 10 + q + 1;
                    return v;
                };
                const digits d = cc::scan_host_memory(comm, digits{me + 1, 1}, append_digits{});
                expect(d.value == digits_upto(me) && d.count == me + 1, "scan: digits " + std::to_string(d.value));
                const auto ex = cc::exscan_host_memory(comm, digits{me + 1, 1}, append_digits{});
                expect(me == 0 ? !ex : ex && ex->value == digits_upto(me - 1), "exscan of digits");
                const std::size_t part = cc::host_board::part_capacity / sizeof(double);
                const std::size_t scan_chunk = cc::host_board::large_shape(n).part_capacity / sizeof(double);
                for (const std::size_t length : {std::size_t{17}, part + 1, 2 * scan_chunk + 5, 2 * scan_chunk + 5}) {
                    std::vector<double> v(length);
                    for (std::size_t k = 0; k < length; ++k) v[k] = me * 1000.0 + double(k % 1000);
                    auto want = [&](int upto, std::size_t k) {  // ranks 0..upto
                        return 1000.0 * upto * (upto + 1) / 2 + double(upto + 1) * double(k % 1000);
                    };
                    const auto in = cc::scan_host_memory(comm, v, cc::sum{});
                    const auto exc = cc::exscan_host_memory(comm, v, cc::sum{});
                    std::size_t bad = in.size() == length && (me == 0) != exc.has_value() ? length : 0;
                    if (exc && exc->size() != length) bad = 0;
                    for (std::size_t k = 0; bad == length && k < length; ++k)
                        if (in[k] != want(me, k) || (exc && (*exc)[k] != want(me - 1, k))) bad = k;
                    expect(bad == length, "scan / exscan of " + std::to_string(length) + " doubles: element " +
                                              std::to_string(bad) + " wrong");
                    if (length != 17) slice_meetings += 2 * ((length + scan_chunk - 1) / scan_chunk);
                }
                const auto got = cc::scan_host_memory(comm, std::vector<long>(scan_chunk + 7, me + 1), concat_digits{});
                slice_meetings += 2;
                expect(got == std::vector<long>(scan_chunk + 7, digits_upto(me)),
                       "scan: digits in rank order in every element");
            }
            // Allreduce: one meeting per chunk and one more, 2 + 3 x 5 + 3;
            // reduce_scatter: one per slice; broadcast: one per chunk, 4 from
            // each root.
            if (on_board) {
                const cc::host_board* large = comm.large_board_on_host({}, comm.next_tag());
                expect(
                    large != nullptr && large->meetings() == 20u + slice_meetings + 4u * std::uint64_t(n),
                    "large board meetings: " + (large ? std::to_string(large->meetings()) : std::string("no board")));
            }
            // Lengths or types that differ: every rank throws, and the board
            // goes on. (Without a board the butterfly runs, which does not
            // promise that every rank finds the error.)
            if (n > 1 && on_board) {
                try {
                    (void)cc::allreduce_host_memory(comm, std::vector<int>(me == n - 1 ? 4 : 3, 1), cc::sum{});
                    expect(false, "vectors of different lengths were reduced");
                } catch (const csp::usage_error& e) {
                    expect(std::string(e.what()).find("different lengths") != std::string::npos, e.what());
                }
                // Large vectors of different lengths, and one rank's small
                // among others' large: every rank throws before any chunk.
                for (const std::size_t small : {std::size_t{5000}, std::size_t{3}}) {
                    try {
                        (void)cc::allreduce_host_memory(comm, std::vector<int>(me == n - 1 ? small : 5001, 1),
                                                        cc::sum{});
                        expect(false, "large vectors of different lengths were reduced");
                    } catch (const csp::usage_error& e) {
                        expect(std::string(e.what()).find("different lengths (5001 and " + std::to_string(small) +
                                                          ")") != std::string::npos ||
                                   std::string(e.what()).find("different lengths (" + std::to_string(small) +
                                                              " and 5001)") != std::string::npos,
                               e.what());
                    }
                }
                try {
                    if (me == 0) (void)cc::allreduce_host_memory(comm, 1, cc::sum{});
                    else (void)cc::allreduce_host_memory(comm, 1.0, cc::sum{});
                    expect(false, "values of different types were reduced");
                } catch (const csp::usage_error& e) {
                    expect(std::string(e.what()).find("passed a value of another type") != std::string::npos, e.what());
                }
            }
            expect(cc::allreduce_host_memory(comm, 1, cc::sum{}) == n, "an allreduce after the errors");
            // Reduce on the boards, at every root: a plain value, and a
            // vector of three chunks and a bit with an element-wise op that
            // does not commute (rank order in every element); only the
            // root gets a value.
            for (int root = 0; root < n; ++root) {
                const auto sum = cc::reduce_host_memory(comm, me + 1.0, cc::sum{}, root);
                expect(me == root ? sum == std::optional<double>(n * (n + 1) / 2.0) : !sum.has_value(),
                       "reduce of a double to " + std::to_string(root));
                const std::size_t chunk_longs = cc::host_board::large_shape(n).part_capacity / sizeof(long);
                const auto digits = cc::reduce_host_memory(comm, std::vector<long>(3 * chunk_longs + 5, me + 1),
                                                           concat_digits{}, root);
                long want = 0;
                for (int q = 0; q < n; ++q) want = want * 10 + q + 1;
                expect(me == root ? digits == std::optional(std::vector<long>(3 * chunk_longs + 5, want))
                                  : !digits.has_value(),
                       "reduce of a large vector in rank order to " + std::to_string(root));
            }
            if (n > 1 && on_board) {
                try {
                    if (me == 0) (void)cc::reduce_host_memory(comm, 1, cc::sum{}, n - 1);
                    else (void)cc::reduce_host_memory(comm, 1.0, cc::sum{}, n - 1);
                    expect(false, "a reduce of values of different types");
                } catch (const csp::usage_error& e) {
                    expect(std::string(e.what()).find("reduce host_memory: rank") != std::string::npos, e.what());
                }
            }
            // Allgather on the boards: a plain value; vectors of a length
            // per rank that fit a part; and vectors of a length per rank
            // from one that fits to three chunks and a bit (rank 0's fits,
            // so the chunk meetings also pass ranks with nothing to write).
            {
                const auto doubles = cc::allgather_host_memory(comm, me + 0.5);
                bool ok = doubles.size() == std::size_t(n);
                for (int q = 0; ok && q < n; ++q) ok = doubles[std::size_t(q)] == q + 0.5;
                expect(ok, "allgather of a double");
                const std::size_t chunk_ints = cc::host_board::large_shape(n).part_capacity / sizeof(int);
                const auto length_of = [&](int q, bool large) {
                    return large ? (q == 0 ? std::size_t{100} : std::size_t(q) * chunk_ints + 11 * std::size_t(q))
                                 : std::size_t(q) * 3 + 1;
                };
                for (const bool large : {false, true}) {
                    const auto value_at = [](int q, std::size_t k) { return q * 1000003 + int(k % 1000); };
                    std::vector<int> mine(length_of(me, large));
                    for (std::size_t k = 0; k < mine.size(); ++k) mine[k] = value_at(me, k);
                    const auto all = cc::allgather_host_memory(comm, mine);
                    std::string bad;
                    if (all.size() != std::size_t(n)) bad = std::to_string(all.size()) + " values";
                    for (int q = 0; bad.empty() && q < n; ++q) {
                        const auto& v = all[std::size_t(q)];
                        if (v.size() != length_of(q, large))
                            bad = "rank " + std::to_string(q) + "'s length " + std::to_string(v.size());
                        for (std::size_t k = 0; bad.empty() && k < v.size(); ++k)
                            if (v[k] != value_at(q, k))
                                bad = "rank " + std::to_string(q) + "'s element " + std::to_string(k);
                    }
                    expect(bad.empty(),
                           std::string("allgather of ") + (large ? "large" : "small") + " vectors: " + bad);
                }
                if (n > 1 && on_board) {
                    try {
                        if (me == n - 1) (void)cc::allgather_host_memory(comm, 1);
                        else (void)cc::allgather_host_memory(comm, 1.0);
                        expect(false, "an allgather of values of different types");
                    } catch (const csp::usage_error& e) {
                        expect(std::string(e.what()).find("passed a value of another type") != std::string::npos,
                               e.what());
                    }
                }
            }
            // broadcast_into from every root, into buffers of every rank:
            // empty, one element, a part's worth and three chunks and a bit
            // (the board, and the large board's chunks), by the table and
            // by the board's own step; every element checked. Lengths that
            // differ: on the board every rank is refused, naming both.
            {
                const std::size_t chunk_ints = cc::host_board::large_shape(n).part_capacity / sizeof(int);
                const auto fill = [](int root, std::size_t k) { return root * 1000003 + int(k % 9973); };
                for (const std::size_t length : {std::size_t{0}, std::size_t{1},
                                                 cc::host_board::part_capacity / sizeof(int), 3 * chunk_ints + 11}) {
                    for (int root = 0; root < n; ++root) {
                        for (const bool by_table : {true, false}) {
                            std::vector<int> buffer(length, -1);
                            if (me == root)
                                for (std::size_t k = 0; k < length; ++k) buffer[k] = fill(root, k);
                            if (by_table) cc::broadcast_into(comm, std::span(buffer), root);
                            else if (!cc::broadcast_host_memory.into(comm, std::span(buffer), root, {}))
                                cc::broadcast_into(comm, std::span(buffer), root);  // no board: messages
                            std::size_t bad = length;
                            for (std::size_t k = 0; bad == length && k < length; ++k)
                                if (buffer[k] != fill(root, k)) bad = k;
                            expect(bad == length, "broadcast_into of " + std::to_string(length) + " ints from " +
                                                      std::to_string(root) +
                                                      (by_table ? " by the table" : " on the board") + ", element " +
                                                      std::to_string(bad));
                        }
                    }
                }
                if (n > 1 && on_board) {
                    for (const std::size_t length : {std::size_t{10}, 2 * chunk_ints}) {
                        std::vector<int> buffer(me == n - 1 ? length + 1 : length);
                        try {
                            (void)cc::broadcast_host_memory.into(comm, std::span(buffer), 0, {});
                            expect(false, "broadcast_into buffers of different lengths");
                        } catch (const csp::usage_error& e) {
                            expect(std::string(e.what()).find("rank " + std::to_string(n - 1) + "'s buffer holds " +
                                                              std::to_string(length + 1) + " elements, the root's " +
                                                              std::to_string(length)) != std::string::npos,
                                   e.what());
                        }
                    }
                }
                expect(cc::allreduce_host_memory(comm, 1, cc::sum{}) == n, "an allreduce after broadcast_into");
            }
            // The barrier: nobody leaves before the last arrived (one clock for the whole host).
            // Each rank is late once by longer than a wait spins (host_board.cpp: 400 us, 1 ms on
            // the large board), so the others sleep however the ranks share cores; 200 us, the
            // other rounds' lateness, is within the spin (with both ranks pinned to one core no
            // rank slept in one run of three).
            for (int i = 0; i < 20; ++i) {
                if (me == i % n)
                    csp::sleep_for(i < n ? std::chrono::microseconds(2000) : std::chrono::microseconds(200));
                const auto entered = std::chrono::steady_clock::now().time_since_epoch().count();
                cc::barrier_host_memory(comm);
                const auto left = std::chrono::steady_clock::now().time_since_epoch().count();
                const auto last_in = cc::allreduce_host_memory(comm, entered, cc::maximum{});
                expect(left >= last_in, "left the barrier before the last rank entered it");
            }
            // The late ranks made the others sleep at least once in all; no
            // wake message is left over, at any rank (after the last
            // collective: nobody sends anything after it).
            if (const auto* board = comm.board_on_host({}, comm.next_tag()); board != nullptr && n > 1)
                expect(cc::allreduce_butterfly(comm, board->wakes(), cc::sum{}) > 0, "no rank ever slept");
            cc::barrier(comm);
            expect(comm.unclaimed() == 0, "messages left unclaimed: " + std::to_string(comm.unclaimed()));
        }
        self.close();
    }, options);
    for (const auto& w : wrong) std::cerr << w << '\n';
    if (mode == "host-board-leave") {
        std::cout << (wrong.empty() ? "left ok\n" : "left FAILED\n");
        return wrong.empty() ? 0 : 1;
    }
    if (mode.starts_with("host-board-lost")) {
        std::cout << "lost: " << (lost.empty() ? "nothing" : lost) << '\n';
        return lost.empty() || !wrong.empty() ? 1 : 0;
    }
    std::cout << (wrong.empty() ? "host ok\n" : "host FAILED\n");
    return wrong.empty() ? 0 : 1;
}

}  // namespace

// Ranks that make different collectives at one place of the stream: every
// rank first makes one allreduce together (on one host over UCX, this
// makes the stream's host board), then rank 0 makes a broadcast and then
// an allreduce where the others make an allreduce and then a broadcast
// ("messages"), or rank 0 an allgather where the others make an allreduce
// ("board": they meet on the host board). No rank may print an answer of
// the mismatched calls: each prints "answer" or "refused: <error>".
int mismatched_calls_mode(const std::string& mode) {
    csp::run([&] {
        csp::net::node self;
        cc::net_communicator comm(self);
        try {
            (void)cc::allreduce(comm, 1.0, cc::sum{});
            double x = 0, y = 0;
            if (mode == "mismatched-calls-board") {
                if (comm.rank() == 0) x = cc::allgather(comm, 1.0).front();
                else y = cc::allreduce(comm, 1.0, cc::sum{});
            } else if (comm.rank() == 0) {
                x = cc::broadcast(comm, 7.0, 0);
                y = cc::allreduce(comm, 1.0, cc::sum{});
            } else {
                y = cc::allreduce(comm, 1.0, cc::sum{});
                x = cc::broadcast(comm, 7.0, 0);
            }
            std::printf("answer %g %g\n", x, y);
        } catch (const std::exception& e) {
            std::printf("refused: %s\n", e.what());
        }
        std::fflush(stdout);
    });
    return 0;
}

// Vectors of an element-wise allreduce whose lengths differ between ranks
// and lie on either side of a bound of the selection table, so that rank 0
// chooses another algorithm than the others: argv[2] and argv[3] elements
// (rank 0's, the others'), or one element against just past the table's
// first bound for this job. Each rank prints "answer <size> <first>" or
// "refused: <error>".
int mismatched_sizes_mode(int argc, char** argv) {
    const std::size_t given_first = argc > 3 ? std::stoul(argv[2]) : 0;
    const std::size_t given_others = argc > 3 ? std::stoul(argv[3]) : 0;
    csp::run([&] {
        csp::net::node self;
        cc::net_communicator comm(self);
        const auto request = cc::detail::request_of(comm, "allreduce", cc::stream{}, 0, true, true);
        const std::size_t bound = cc::selection::global().first_change(request, cc::detail::rules_of("allreduce"));
        if (bound == cc::no_limit) {
            std::printf("no bound\n");
            return;
        }
        std::size_t elements = comm.rank() == 0 ? 1 : bound / sizeof(double) + 1;
        if (given_first != 0) elements = comm.rank() == 0 ? given_first : given_others;
        try {
            auto v = cc::allreduce(comm, std::vector<double>(elements, 1.0), cc::sum{});
            std::printf("answer %zu %g\n", v.size(), v.empty() ? 0.0 : v.front());
        } catch (const std::exception& e) {
            std::printf("refused: %s\n", e.what());
        }
        std::fflush(stdout);
    });
    return 0;
}

// One rank's bad input (net_test.cpp, revoked_stream): the root of a
// scatter holds too few values (by its plain name, or its algorithm's),
// rank 1 gives alltoall too many, or the root of a reduce_scatter folds
// vectors of different lengths. Every rank prints
// what its call threw, then what a later allreduce on the same stream and
// one on another stream gave.
int bad_input_mode(const std::string& mode) {
    csp::run([&] {
        csp::net::node self;
        cc::net_communicator comm(self);
        const int r = comm.rank(), n = comm.size();
        try {
            if (mode == "bad-input-scatter") {
                (void)cc::scatter(comm, std::vector<int>(r == 0 ? n - 1 : 0, 5), 0);
            } else if (mode == "bad-input-scatter_parallel") {  // an algorithm called by its name
                (void)cc::scatter_parallel(comm, std::vector<int>(r == 0 ? n - 1 : 0, 5), 0);
            } else if (mode == "bad-input-alltoall") {
                (void)cc::alltoall(comm, std::vector<int>(r == 1 ? n + 1 : n, r));
            } else {
                (void)cc::reduce_scatter_block(comm, std::vector<double>(r == 0 ? 2 * n : 3 * n, 1.0), cc::sum{});
            }
            std::printf("answer\n");
        } catch (const std::exception& e) {
            std::printf("failed: %s\n", e.what());
        }
        try {
            std::printf("same stream %d\n", cc::allreduce(comm, 1, cc::sum{}));
        } catch (const cc::stream_revoked&) {
            std::printf("same stream revoked\n");
        }
        std::printf("other stream %d\n", cc::allreduce(comm, 1, cc::sum{}, cc::stream{1}));
        std::fflush(stdout);
    });
    return 0;
}

int main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]).starts_with("mismatched-calls")) return mismatched_calls_mode(argv[1]);
    if (argc > 1 && std::string(argv[1]) == "mismatched-sizes") return mismatched_sizes_mode(argc, argv);
    if (argc > 1 && std::string(argv[1]).starts_with("bad-input")) return bad_input_mode(argv[1]);
    if (argc > 1 && std::string(argv[1]) == "allreduce-forever") {
        csp::run([] {
            csp::net::node self;
            csp::collectives::net_communicator comm(self);
            for (;;) csp::collectives::allreduce(comm, 1, csp::collectives::sum{});
        });
        return 0;
    }
    if (argc > 1 && std::string(argv[1]) == "shared-forever") {
        csp::run([] {
            csp::net::node self;
            csp::collectives::net_communicator comm(self);
            cc::shared_group g(comm);
            cc::shared<long> x(g);
            for (;;) {
                x += 1;
                (void)x.get();
            }
        });
        return 0;
    }
    if (argc > 1 && std::string(argv[1]) == "choices") {
        csp::run([] {
            csp::net::node self;
            cc::net_communicator comm(self);
            cc::trace_log log;
            cc::traced tc(comm, log);
            cc::barrier(tc);
            (void)cc::allreduce(tc, std::vector<double>(4096, 1.0), cc::sum{});
            std::string line = "choices " + std::to_string(comm.rank()) +
                               " crowded=" + std::to_string(comm.job_oversubscribed() ? 1 : 0);
            for (const auto& a : log.algorithms()) line += " " + a;
            std::printf("%s\n", line.c_str());
            std::fflush(stdout);
        });
        return 0;
    }
    if (argc > 1 && std::string(argv[1]).starts_with("host-board")) return host_board_mode(argv[1]);
    if (argc > 1 && std::string(argv[1]) == "host-groups") return host_groups_mode(false);
    if (argc > 1 && std::string(argv[1]) == "split-groups") return host_groups_mode(true);
    if (argc > 1 && std::string(argv[1]) == "host-groups-lost") return host_groups_lost_mode();
    if (argc > 1 && std::string(argv[1]) == "hybrid-fail") {
        // Rank 1 (a fiber of node 0) throws before an allreduce: every rank of
        // every node must fail, none wait for ever. Exits 0 when this node saw
        // an error, printing it.
        std::string what;
        try {
            csp::run([] {
                csp::net::node self;
                cc::hybrid_job job(self, 2);
                job.run([](cc::hybrid_communicator& c) {
                    if (c.rank() == 1) throw std::runtime_error("rank 1 gave up");
                    (void)cc::allreduce(c, 1, cc::sum{});
                });
            });
        } catch (const std::exception& e) {
            what = e.what();
        }
        std::cout << "hybrid failure: " << (what.empty() ? "none" : what) << '\n';
        return what.empty() ? 1 : 0;
    }
    if (argc > 1 && std::string(argv[1]) == "hybrid") {
        // A hybrid job: node k holds 2 + k % 2 ranks as fibers (uneven
        // nodes), or `hybrid F` F on every node; the grid runs over all of
        // them, then again over the hierarchy's two levels inside it.
        const int even = argc > 2 ? std::stoi(argv[2]) : 0;
        auto fibers_of = [even](int node) { return even > 0 ? even : 2 + node % 2; };
        std::vector<std::string> wrong;
        csp::run([&] {
            csp::net::node self;
            {
                cc::hybrid_job job(self, fibers_of(self.rank()));
                auto per_rank = job.run([&fibers_of](cc::hybrid_communicator& c) {
                    auto w = grid::check_all(c);
                    // Two levels by node: the fibers of each node, then one
                    // leader per node.
                    cc::hierarchy h(c, "node" + std::to_string(c.node()));
                    const long n = c.size();
                    if (cc::hierarchical::allreduce(h, long(c.rank() + 1), cc::sum{}) != n * (n + 1) / 2)
                        w.push_back("rank " + std::to_string(c.rank()) + ": hierarchical allreduce by node");
                    if (h.local().size() != fibers_of(c.node()))
                        w.push_back("rank " + std::to_string(c.rank()) + ": the node's ranks");
                    cc::hierarchical::local_barrier(h);
                    // Shared variables over the hybrid job.
                    auto s = check_shared(c);
                    w.insert(w.end(), s.begin(), s.end());
                    cc::barrier(c);
                    return w;
                });
                for (auto& w : per_rank) wrong.insert(wrong.end(), w.begin(), w.end());
            }
            self.close();
        });
        for (const auto& w : wrong) std::cerr << w << '\n';
        std::cout << (wrong.empty() ? "hybrid ok\n" : "hybrid FAILED\n");
        return wrong.empty() ? 0 : 1;
    }
    const bool shared = argc > 1 && std::string(argv[1]) == "shared";
    std::vector<std::string> wrong;
    csp::run([&] {
        csp::net::node self;
        {
            csp::collectives::net_communicator comm(self);
            wrong = shared ? check_shared(comm) : grid::check_all(comm);
            csp::collectives::barrier(comm);  // nobody leaves while others still receive
        }
        self.close();
    });
    for (const auto& w : wrong) std::cerr << w << '\n';
    const char* what = shared ? "shared" : "grid";
    std::cout << what << (wrong.empty() ? " ok\n" : " FAILED\n");
    return wrong.empty() ? 0 : 1;
}
