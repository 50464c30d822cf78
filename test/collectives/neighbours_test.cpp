// Ranks on a grid and the halo exchange between them: every ghost holds
// its neighbour's edge, on every kind of communicator.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <span>
#include <type_traits>
#include <vector>

#include "collectives/collectives.hpp"
#include "collectives/net_communicator.hpp"
#include "collectives/revocation.hpp"
#include "csp/runtime.hpp"
#include "csp/timer.hpp"
#include "net/net.hpp"
#include "test/net/net_fixture.hpp"

namespace cc = csp::collectives;

// An exchange can be kept in a container or returned from a function (its
// book of loans moves with it).
static_assert(std::is_move_constructible_v<cc::neighbour_exchange<double, cc::net_communicator>>);

TEST(cartesian, coordinates_and_ranks_are_row_major_and_round_trip) {
    cc::cartesian g({2, 3});
    EXPECT_EQ(g.size(), 6);
    EXPECT_EQ(g.coords(4), (std::vector<int>{1, 1}));
    for (int r = 0; r < 6; ++r) EXPECT_EQ(g.rank_of(g.coords(r)), r);
    EXPECT_EQ(g.rank_of({2, 0}), cc::no_rank);  // past a non-periodic edge
}

TEST(cartesian, shifts_wrap_on_periodic_axes_and_end_at_the_others) {
    cc::cartesian g({3, 4}, {false, true});
    auto s = g.shift(0, 0, 1);  // down the first axis from the top row
    EXPECT_EQ(s.source, cc::no_rank);
    EXPECT_EQ(s.destination, 4);
    s = g.shift(0, 1, 1);  // along the periodic axis: wraps
    EXPECT_EQ(s.source, 3);
    EXPECT_EQ(s.destination, 1);
    EXPECT_EQ(g.neighbours(5), (std::vector<int>{1, 9, 4, 6}));
    EXPECT_EQ(g.neighbours(11), (std::vector<int>{7, cc::no_rank, 10, 8}));
}

TEST(cartesian, balanced_dims_factor_as_evenly_as_possible) {
    EXPECT_EQ(cc::balanced_dims(12, 2), (std::vector<int>{4, 3}));
    EXPECT_EQ(cc::balanced_dims(8, 3), (std::vector<int>{2, 2, 2}));
    EXPECT_EQ(cc::balanced_dims(7, 2), (std::vector<int>{7, 1}));
    EXPECT_EQ(cc::balanced_dims(1, 2), (std::vector<int>{1, 1}));
    EXPECT_THROW(cc::balanced_dims(0, 2), csp::usage_error);
    EXPECT_THROW(cc::cartesian({2, 0}), csp::usage_error);
    EXPECT_THROW(cc::cartesian({2, 2}, {true}), csp::usage_error);
    EXPECT_THROW(cc::cartesian({2, 2}).coords(4), csp::usage_error);
}

namespace {

// A rank's edge values say whose edge and which side it is, and the step.
double edge_value(int rank, std::size_t side, int step, std::size_t i) {
    return rank * 1e6 + static_cast<double>(side) * 1e4 + step * 10 + static_cast<double>(i);
}

// Every rank of `grid` exchanges `steps` times with its 2 * ndims
// neighbours; returns how many ghost values were checked.
template <class C>
long halo_steps(C& comm, const cc::cartesian& grid, int steps, bool split, std::size_t n = 5,
                cc::sends how = cc::sends::copied) {
    const auto nbs = grid.neighbours(comm.rank());
    std::vector<std::vector<double>> edges(nbs.size(), std::vector<double>(n)),
        ghosts(nbs.size(), std::vector<double>(n, -1));
    std::vector<std::span<const double>> out;
    std::vector<std::span<double>> in;
    for (std::size_t i = 0; i < nbs.size(); ++i) {
        out.emplace_back(edges[i]);
        in.emplace_back(ghosts[i]);
    }
    auto halo = cc::make_neighbour_exchange<double>(comm, nbs, out, in, {}, how);
    long checked = 0;
    for (int step = 0; step < steps; ++step) {
        for (std::size_t i = 0; i < nbs.size(); ++i)
            for (std::size_t k = 0; k < n; ++k) edges[i][k] = edge_value(comm.rank(), i, step, k);
        if (split) {
            halo.start();
            if (how == cc::sends::copied)
                for (auto& e : edges) std::fill(e.begin(), e.end(), -7.0);  // the sends copied already
            halo.finish();
        } else {
            halo.exchange();
        }
        for (std::size_t i = 0; i < nbs.size(); ++i) {
            if (nbs[i] == cc::no_rank) {
                EXPECT_EQ(ghosts[i][0], -1.0);  // untouched
                continue;
            }
            // Neighbour i's edge on the side facing this rank: i ^ 1.
            for (std::size_t k = 0; k < n; ++k) {
                EXPECT_EQ(ghosts[i][k], edge_value(nbs[i], i ^ 1, step, k))
                    << "rank " << comm.rank() << " ghost " << i << " step " << step;
                ++checked;
            }
        }
    }
    if constexpr (!std::is_same_v<C, cc::local_communicator>) {
        // exchange() lends large rows whatever the mode; start() only under sends::lent.
        std::size_t with_rank = 0;
        for (int r : nbs) with_rank += r != cc::no_rank && r != comm.rank();
        const bool lends = (how == cc::sends::lent || !split) && n * sizeof(double) >= 32 * 1024;
        EXPECT_EQ(halo.lent_count(), lends ? with_rank * static_cast<std::size_t>(steps) : 0u)
            << "rank " << comm.rank() << (split ? " start/finish" : " exchange");
    }
    return checked;
}

}  // namespace

class local_halo : public ::testing::TestWithParam<std::tuple<std::vector<int>, std::vector<bool>, bool>> {};

TEST_P(local_halo, every_ghost_holds_the_neighbours_facing_edge_every_step) {
    const auto& [dims, periodic, split] = GetParam();
    cc::cartesian grid(dims, periodic);
    long expected = 0;
    for (int r = 0; r < grid.size(); ++r)
        for (int nb : grid.neighbours(r)) expected += nb == cc::no_rank ? 0 : 5 * 40;
    long checked = 0;
    csp::run(
        [&] {
            auto counts =
                cc::run_local(grid.size(), [&](cc::local_communicator& c) { return halo_steps(c, grid, 40, split); });
            for (long k : counts) checked += k;
        },
        {.threads = 2});
    EXPECT_EQ(checked, expected);
}

INSTANTIATE_TEST_SUITE_P(
    grids, local_halo,
    ::testing::Values(std::make_tuple(std::vector<int>{4}, std::vector<bool>{false}, false),
                      std::make_tuple(std::vector<int>{4}, std::vector<bool>{true}, true),
                      std::make_tuple(std::vector<int>{2}, std::vector<bool>{true}, false),  // each other's both sides
                      std::make_tuple(std::vector<int>{1}, std::vector<bool>{true}, true),   // its own neighbour
                      std::make_tuple(std::vector<int>{2, 3}, std::vector<bool>{false, true}, true),
                      std::make_tuple(std::vector<int>{2, 2, 2}, std::vector<bool>{true, false, true}, false)));

// A rank that is its own neighbour on both sides of an axis copies its rows
// across instead of sending them to itself: on a 1 x 1 and a 2 x 1 torus
// (the second axis of one rank) every ghost holds the right edge, whole,
// split with the sent rows overwritten between start() and finish(), and
// lent, and the trace shows messages only between the two ranks.
TEST(local_halo, a_rank_its_own_neighbour_copies_its_rows_across_and_sends_itself_nothing) {
    for (const auto& dims : {std::vector<int>{1, 1}, std::vector<int>{2, 1}})
        for (const auto& [split, how] : {std::pair{false, cc::sends::copied}, std::pair{true, cc::sends::copied},
                                         std::pair{true, cc::sends::lent}}) {
            const cc::cartesian grid(dims, {true, true});
            cc::trace_log log;
            long checked = 0;
            csp::run([&] {
                auto counts = cc::run_local(grid.size(), [&](cc::local_communicator& c) {
                    cc::traced tc(c, log);
                    const long checked_here = halo_steps(tc, grid, 6, split, 5, how);
                    if (grid.size() == 1) {  // sendrecv to itself: copied too
                        const std::vector<double> a{1, 2, 3};
                        std::vector<double> b(4, -1.0), tiny(2);
                        EXPECT_EQ(cc::sendrecv(tc, std::span<const double>(a), 0, std::span<double>(b), 0), 3u);
                        EXPECT_EQ(b, (std::vector<double>{1, 2, 3, -1}));
                        // (Untraced: the failure revokes the stream, a notice to every rank.)
                        EXPECT_THROW(cc::sendrecv(c, std::span<const double>(a), 0, std::span<double>(tiny), 0),
                                     csp::usage_error);
                    }
                    return checked_here;
                });
                for (long k : counts) checked += k;
            });
            const std::string what = std::to_string(dims[0]) + " x 1" + (split ? " start/finish" : " exchange") +
                                     (how == cc::sends::lent ? " lent" : "");
            EXPECT_EQ(checked, grid.size() * 4 * 5 * 6) << what;  // 4 ghosts of 5 values, 6 steps
            long messages = 0;
            for (const auto& e : log.events()) {
                if (e.what != cc::trace_event::kind::send && e.what != cc::trace_event::kind::receive) continue;
                EXPECT_NE(e.peer, e.rank) << what << ": rank " << e.rank << " messaged itself";
                ++messages;
            }
            // 2 x 1: each rank sends its two rows and receives two, each step.
            EXPECT_EQ(messages, dims[0] == 1 ? 0 : 2 * 4 * 6) << what;
        }
}

TEST(net_halo, a_job_of_one_on_a_periodic_axis_is_its_own_neighbour_on_both_sides) {
    csp::run([] {
        csp::net::node self{csp::net::node_options{}};
        {
            cc::net_communicator comm(self);
            EXPECT_EQ(halo_steps(comm, cc::cartesian({1}, {true}), 10, true), 2 * 5 * 10);
        }
        self.close();
    });
}

// sends::lent between nodes (UCX or TCP, whichever links them): rows of
// 8,192 doubles (64 KiB, sent from the rows themselves) on a column of three
// nodes, exchanged whole and split, every ghost value checked each step;
// then a sendrecv of as many round the three.
TEST(net_halo, lent_rows_reach_every_neighbour_on_a_column_of_three_nodes) {
    csp::net::nameserver ns;
    std::atomic<long> checked{0};
    net_test::run_nodes(ns, "halo-lent", 3, [&](csp::net::node& self) {
        {
            cc::net_communicator comm(self);
            checked += halo_steps(comm, cc::cartesian({3}), 6, true, 8192, cc::sends::lent);
            checked += halo_steps(comm, cc::cartesian({3}), 6, false, 8192, cc::sends::lent);
            // sendrecv round the ring of three with spans of 64 KiB (lent).
            const int me = comm.rank(), next = (me + 1) % 3, prev = (me + 2) % 3;
            std::vector<double> mine(8192), got(8192, -1.0);
            for (std::size_t k = 0; k < mine.size(); ++k) mine[k] = edge_value(me, 0, 99, k);
            EXPECT_EQ(cc::sendrecv(comm, std::span<const double>(mine), next, std::span<double>(got), prev), 8192u);
            std::fill(mine.begin(), mine.end(), -7.0);  // free to change once sendrecv returned
            for (std::size_t k = 0; k < got.size(); ++k) checked += got[k] == edge_value(prev, 0, 99, k);
            cc::barrier(comm);
        }
        self.close();
    });
    EXPECT_EQ(checked.load(), 4L * 8192 * 6 * 2 + 3L * 8192);  // 4 ghosts with a neighbour in the column; 3 shifts
}

// Rows of 128 KiB (split frames over UCX) on a column of three nodes,
// exchanged whole (lent whatever the mode) and split (copied): every ghost
// value checked each step, with rows landing
// in the ghost buffers (node_stats::landed) as they may.
TEST(net_halo, large_rows_are_received_into_the_ghost_buffers_themselves) {
    csp::net::nameserver ns;
    std::atomic<long> checked{0};
    std::atomic<std::size_t> landed{0};
    net_test::run_nodes(ns, "halo-land", 3, [&](csp::net::node& self) {
        {
            cc::net_communicator comm(self);
            checked += halo_steps(comm, cc::cartesian({3}), 8, false, 16384);
            checked += halo_steps(comm, cc::cartesian({3}), 8, false, 16384, cc::sends::lent);
            // start() copies: the rows are overwritten before finish().
            checked += halo_steps(comm, cc::cartesian({3}), 8, true, 16384);
            cc::barrier(comm);
            landed += self.stats().landed;
        }
        self.close();
    });
    EXPECT_EQ(checked.load(), 4L * 16384 * 8 * 3);
    // 96 rows crossed between nodes; those that arrived before their
    // receiver's exchange began were copied as before.
    EXPECT_LE(landed.load(), 96u);
}

TEST(halo_errors, a_buffer_too_small_or_a_wrong_neighbour_list_is_named) {
    csp::run([] {
        cc::run_local(2, [](cc::local_communicator& c) {
            std::vector<double> big(8, 1.0), small(4);
            const int other = 1 - c.rank();
            EXPECT_THROW(cc::sendrecv(c, std::span<const double>(big), other, std::span<double>(small), other),
                         csp::usage_error);
            std::vector<double> a(4), b(4);
            EXPECT_THROW(cc::make_neighbour_exchange<double>(c, {other}, {a}, {b}), csp::usage_error);  // not a pair
            EXPECT_THROW(cc::make_neighbour_exchange<double>(c, {other, 5}, {a, a}, {b, b}), csp::usage_error);
            // sendrecv with no_rank on one side, in another stream: the
            // failed sendrecv revoked stream 0 (collectives/revocation.hpp).
            std::vector<double> got(4, -1);
            const std::size_t n = cc::sendrecv(c, std::span<const double>(a), c.rank() == 0 ? 1 : cc::no_rank,
                                               std::span<double>(got), c.rank() == 1 ? 0 : cc::no_rank, cc::stream{1});
            EXPECT_EQ(n, c.rank() == 1 ? 4u : 0u);
        });
    });
}

// Regression: arguments only some ranks get wrong (a 2 x 2 grid over 3
// ranks gives ranks 1 and 2 the neighbour 3) failed those ranks' exchange
// as it was made, and rank 0, whose neighbours are 1 and 2, waited for
// their rows until the deadlock report. Making the exchange now revokes its
// stream at every rank: rank 0's first exchange throws, naming the cause,
// and another stream goes on.
// Regression: a rank listed as its own neighbour on one side of an axis
// only waited for ever for the row it had sent the other side; the list is
// now refused when the exchange is made, naming both sides.
TEST(halo_errors, a_rank_its_own_neighbour_on_one_side_only_is_refused_not_left_waiting) {
    csp::run([] {
        cc::run_local(2, [](cc::local_communicator& c) {
            const int other = 1 - c.rank();
            std::vector<double> a(4), b(4);
            for (const std::vector<int>& nbs :
                 {std::vector<int>{c.rank(), other}, std::vector<int>{cc::no_rank, c.rank()}}) {
                try {
                    cc::make_neighbour_exchange<double>(c, nbs, {a, a}, {b, b},
                                                        cc::stream{nbs[0] == c.rank() ? 2u : 3u});
                    ADD_FAILURE() << "a one-sided self neighbour was taken";
                } catch (const csp::usage_error& e) {
                    const std::string want =
                        "rank " + std::to_string(c.rank()) + " is its own neighbour on side " +
                        (nbs[0] == c.rank() ? "0 but has rank " + std::to_string(other) + " on side 1"
                                            : std::string("1 but has none on side 0"));
                    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
                }
            }
        });
    });
}

TEST(halo_errors, a_neighbour_outside_the_group_at_one_rank_fails_every_ranks_exchange) {
    std::vector<std::string> what(3);
    std::vector<int> sums(3);
    csp::run([&] {
        cc::run_local(3, [&](cc::local_communicator& c) {
            const auto nbs = cc::cartesian({2, 2}).neighbours(c.rank());
            std::vector<double> rows(8 * nbs.size(), 1.0);
            std::vector<std::span<const double>> out;
            std::vector<std::span<double>> in;
            for (std::size_t k = 0; k < nbs.size(); ++k) {
                out.emplace_back(&rows[8 * k], 4);
                in.emplace_back(&rows[8 * k + 4], 4);
            }
            try {
                auto halo = cc::make_neighbour_exchange<double>(c, nbs, out, in, cc::stream{2});
                halo.exchange();
                what[c.rank()] = "exchanged";
            } catch (const cc::stream_revoked& e) {
                what[c.rank()] = std::string("revoked: ") + e.cause();
            } catch (const csp::usage_error& e) {
                what[c.rank()] = e.what();
            }
            sums[c.rank()] = cc::allreduce(c, 1, cc::sum{}, cc::stream{3});
        });
    });
    EXPECT_EQ(what[1], "neighbour_exchange: neighbour rank 3 is outside the group of 3");
    EXPECT_EQ(what[2], "neighbour_exchange: neighbour rank 3 is outside the group of 3");
    EXPECT_EQ(what[0].rfind("revoked: rank ", 0), 0u) << what[0];
    EXPECT_NE(what[0].find("'s neighbour exchange (call 0 of stream 2) failed: neighbour_exchange: neighbour rank 3 "
                           "is outside the group of 3"),
              std::string::npos)
        << what[0];
    EXPECT_EQ(sums, (std::vector<int>{3, 3, 3}));
}

// Regression: a rank blocked in a collective receive was reported as
// "reading from channel#9 (made at mailbox.hpp:123)", which names nothing a
// user wrote; the report now says which rank and tag it waits for.
TEST(halo_errors, a_blocked_receive_names_its_source_and_tag_in_the_deadlock_report) {
    std::string report;
    try {
        csp::run([] {
            cc::run_local(2, [](cc::local_communicator& c) {
                std::vector<double> ghost(3);
                if (c.rank() == 0) cc::receive_into(c, 1, cc::tag(1, 7, 2), std::span<double>(ghost));  // never sent
            });
        });
    } catch (const csp::deadlock_error& e) {
        report = e.what();
    }
    EXPECT_NE(report.find(
                  "process 'rank 0' is blocked waiting for a message from rank 1 with tag (stream 1, call 7, step 2)"),
              std::string::npos)
        << report;
}

// Regression: a row that start() could not send (its neighbour had left)
// failed that rank's exchange alone, so the neighbour on its other side
// waited for a row that never came until the failing rank closed its node,
// and the failed step's rows were logged at close as messages of "a call
// this rank did not make". A failed send now fails the step at every rank of
// the stream, as a failed receive does. A column of three nodes: rank 0
// leaves, rank 1's first send (to rank 0) fails, rank 2 waits for rank 1's
// row; rank 1 keeps its node open for 2 s after its failure.
TEST(halo_errors, a_row_that_could_not_be_sent_fails_the_step_at_every_rank) {
    const net_test::captured_log log;
    std::string rank2_error;
    csp::clock::duration rank2_waited{};
    csp::net::nameserver ns;
    net_test::run_nodes(ns, "halo-send-fails", 3, [&](csp::net::node& self) {
        auto departures = self.open(7, csp::net::departures::each);
        {
            cc::net_communicator comm(self);
            const int n = 16;
            std::vector<double> t(4 * n, 1.0);
            auto halo = cc::make_neighbour_exchange<double>(
                comm, cc::cartesian({3}).neighbours(comm.rank()),
                {std::span<const double>(&t[n], n), std::span<const double>(&t[2 * n], n)},
                {std::span<double>(&t[0], n), std::span<double>(&t[3 * n], n)}, cc::stream{1});
            if (self.rank() == 1) {
                EXPECT_THROW(departures.receive(), csp::net::peer_error);  // rank 0 has left
                EXPECT_THROW(halo.exchange(), csp::net::peer_error);
                csp::sleep_for(std::chrono::seconds(2));
            } else if (self.rank() == 2) {
                const auto start = csp::clock::now();
                try {
                    halo.exchange();
                    ADD_FAILURE() << "rank 2's exchange returned without rank 1's row";
                } catch (const cc::revoked_by_peer_error& e) {
                    rank2_error = e.what();
                    EXPECT_EQ(e.peer(), 0);
                } catch (const std::exception& e) {
                    rank2_error = e.what();
                    ADD_FAILURE() << "rank 2: " << e.what();
                }
                rank2_waited = csp::clock::now() - start;
            }
        }
        self.close();
    });
    EXPECT_NE(
        rank2_error.find("rank 1's neighbour exchange (call 0 of stream 1) failed: node 0 of job 'halo-send-fails'"),
        std::string::npos)
        << rank2_error;
    EXPECT_LT(rank2_waited, std::chrono::milliseconds(1500));  // not when rank 1 closed, 2 s on
    for (const auto& l : log.lines())  // every fault is logged too
        if (l.find("no collective call took") != std::string::npos) ADD_FAILURE() << "logged: " << l;
}

namespace {

// One step's exchange, whole or split-phase.
template <class H>
void exchange_once(H& halo, bool split) {
    if (split) {
        halo.start();
        halo.finish();
    } else {
        halo.exchange();
    }
}

// A column of `rows` rows of width n per rank, between ghost rows, relaxed
// `steps` times into a second vector that is then swapped in (a stencil's
// double buffer), with one exchange over the field `t`; `reallocate` also
// moves `t` to a new buffer every step. Returns this rank's rows.
template <class C>
std::vector<double> relax_swapping(C& comm, std::size_t rows, std::size_t n, int steps, bool split, bool reallocate) {
    const auto nbs = cc::cartesian({comm.size()}).neighbours(comm.rank());
    std::vector<double> t((rows + 2) * n);
    for (std::size_t i = 0; i < t.size(); ++i) {
        const auto global_row = static_cast<long>(static_cast<std::size_t>(comm.rank()) * rows + i / n) - 1;
        t[i] = static_cast<double>((global_row * 31 + static_cast<long>(i % n) * 7 + 1000) % 101);
    }
    std::vector<double> next = t;  // the ghost rows past the column's ends stay in both
    auto halo = cc::make_neighbour_exchange(comm, nbs, t, {cc::row{n, n}, cc::row{rows * n, n}},
                                            {cc::row{0, n}, cc::row{(rows + 1) * n, n}});
    for (int s = 0; s < steps; ++s) {
        exchange_once(halo, split);
        for (std::size_t r = 1; r <= rows; ++r)
            for (std::size_t k = 0; k < n; ++k)
                next[r * n + k] = (t[(r - 1) * n + k] + t[r * n + k] + t[(r + 1) * n + k]) / 3;
        t.swap(next);
        if (reallocate) t = std::vector<double>(t);  // the old buffer is freed
    }
    return {t.begin() + static_cast<long>(n), t.begin() + static_cast<long>((rows + 1) * n)};
}

// The whole column relaxed by one rank.
std::vector<double> relaxed_alone(std::size_t rows, std::size_t n, int steps) {
    std::vector<double> out;
    csp::run([&] {
        out = cc::run_local(
            1, [&](cc::local_communicator& c) { return relax_swapping(c, rows, n, steps, false, false); })[0];
    });
    return out;
}

}  // namespace

// Regression: an exchange keeps the spans it was built over, so a stencil
// that swapped its two vectors after each step (the natural way to write
// it) sent and received through the other vector's rows, and one that
// reallocated wrote into freed memory. An exchange over a field finds its
// rows in the vector at each start(): the column relaxed on 4 ranks matches
// one rank's, bit for bit, with the vectors swapped, reallocated, whole and
// split.
TEST(field_halo, a_double_buffer_swapped_every_step_exchanges_the_rows_it_holds_then) {
    constexpr std::size_t rows = 3, n = 5;
    constexpr int ranks = 4, steps = 20;
    const std::vector<double> alone = relaxed_alone(rows * ranks, n, steps);
    for (bool split : {false, true})
        for (bool reallocate : {false, true}) {
            std::vector<double> column;
            csp::run([&] {
                for (auto& part : cc::run_local(ranks, [&](cc::local_communicator& c) {
                         return relax_swapping(c, rows, n, steps, split, reallocate);
                     }))
                    column.insert(column.end(), part.begin(), part.end());
            }, {.threads = 2});
            EXPECT_EQ(column, alone) << (split ? "start/finish" : "exchange") << (reallocate ? ", reallocated" : "");
        }
}

// Between nodes, with rows of 128 KiB that land in the receive rows
// themselves: the landing follows the swapped vector too.
TEST(field_halo, rows_of_a_swapped_field_land_where_the_field_is_now_between_nodes) {
    constexpr std::size_t rows = 2, n = 16384;
    constexpr int steps = 6;
    const std::vector<double> alone = relaxed_alone(rows * 3, n, steps);
    std::vector<std::vector<double>> parts(3);
    csp::net::nameserver ns;
    net_test::run_nodes(ns, "field-halo", 3, [&](csp::net::node& self) {
        {
            cc::net_communicator comm(self);
            parts[static_cast<std::size_t>(self.rank())] = relax_swapping(comm, rows, n, steps, false, true);
            cc::barrier(comm);
        }
        self.close();
    });
    std::vector<double> column;
    for (auto& p : parts) column.insert(column.end(), p.begin(), p.end());
    EXPECT_TRUE(column == alone) << "the column differs from one rank's";
}

// A field that no longer holds a row fails that step at every rank of the
// stream: the rank whose field shrank names the row and the size, the other
// hears it as a revocation; another stream goes on.
TEST(field_halo, a_row_outside_the_field_fails_the_step_at_every_rank_naming_it) {
    std::vector<std::string> what(2);
    std::vector<int> sums(2);
    csp::run([&] {
        cc::run_local(2, [&](cc::local_communicator& c) {
            const auto nbs = cc::cartesian({2}).neighbours(c.rank());
            std::vector<double> t(4 * 5, 1.0);
            auto halo = cc::make_neighbour_exchange(c, nbs, t, {cc::row{5, 5}, cc::row{10, 5}},
                                                    {cc::row{0, 5}, cc::row{15, 5}}, cc::stream{2});
            try {
                halo.exchange();
                if (c.rank() == 1) t.resize(12);
                halo.exchange();
                what[static_cast<std::size_t>(c.rank())] = "exchanged";
            } catch (const cc::stream_revoked& e) {
                what[static_cast<std::size_t>(c.rank())] = std::string("revoked: ") + e.cause();
            } catch (const csp::usage_error& e) {
                what[static_cast<std::size_t>(c.rank())] = e.what();
            }
            sums[static_cast<std::size_t>(c.rank())] = cc::allreduce(c, 1, cc::sum{}, cc::stream{3});
        });
    });
    const std::string named = "neighbour_exchange: send row 1 (elements 10 to 15) is outside the field of 12 elements";
    EXPECT_EQ(what[1], named);
    EXPECT_EQ(what[0].rfind("revoked: rank 1's neighbour exchange (call ", 0), 0u) << what[0];
    EXPECT_NE(what[0].find(named), std::string::npos) << what[0];
    EXPECT_EQ(sums, (std::vector<int>{2, 2}));
}

namespace {

// A grid of (py * rows) x (px * n) points, with a ring of ghost points
// round it that stays fixed unless the grid is a torus, relaxed `steps`
// times by the five-point stencil. Each rank holds a rows x n tile between
// ghost rows and columns (w = n + 2 wide); the columns go as strided parts.
double start_value(long gr, long gc) { return static_cast<double>((gr * 31 + gc * 7 + 1000) % 101); }

double five_point(const double* t, std::size_t at, std::size_t w) {
    return ((((t[at - w] + t[at + w]) + t[at - 1]) + t[at + 1]) + t[at]) / 5;
}

template <class C>
std::vector<double> relax_tile(C& comm, const cc::cartesian& grid, std::size_t rows, std::size_t n, int steps,
                               bool split, std::size_t* lent = nullptr) {
    const std::size_t w = n + 2;
    const auto at = grid.coords(comm.rank());
    std::vector<double> t((rows + 2) * w);
    for (std::size_t r = 0; r < rows + 2; ++r)
        for (std::size_t c = 0; c < w; ++c)
            t[r * w + c] = start_value(static_cast<long>(static_cast<std::size_t>(at[0]) * rows + r) - 1,
                                       static_cast<long>(static_cast<std::size_t>(at[1]) * n + c) - 1);
    std::vector<double> next = t;
    auto halo = cc::make_neighbour_exchange(
        comm, grid.neighbours(comm.rank()), t,
        {cc::row{w + 1, n}, cc::row{rows * w + 1, n}, cc::strided{w + 1, rows, 1, w}, cc::strided{w + n, rows, 1, w}},
        {cc::row{1, n}, cc::row{(rows + 1) * w + 1, n}, cc::strided{w, rows, 1, w},
         cc::strided{w + n + 1, rows, 1, w}});
    for (int s = 0; s < steps; ++s) {
        exchange_once(halo, split);
        for (std::size_t r = 1; r <= rows; ++r)
            for (std::size_t c = 1; c <= n; ++c) next[r * w + c] = five_point(t.data(), r * w + c, w);
        t.swap(next);
    }
    if (lent != nullptr) *lent = halo.lent_count();
    std::vector<double> tile;
    for (std::size_t r = 1; r <= rows; ++r) tile.insert(tile.end(), t.begin() + static_cast<long>(r * w + 1),
                                                        t.begin() + static_cast<long>(r * w + n + 1));
    return tile;
}

// The whole grid relaxed in one array, with no exchange: the ghost ring
// fixed, or (a torus) copied from the opposite edges before each step.
std::vector<double> relaxed_grid(std::size_t grid_rows, std::size_t grid_cols, int steps, bool torus) {
    const std::size_t w = grid_cols + 2;
    std::vector<double> t((grid_rows + 2) * w);
    for (std::size_t r = 0; r < grid_rows + 2; ++r)
        for (std::size_t c = 0; c < w; ++c)
            t[r * w + c] = start_value(static_cast<long>(r) - 1, static_cast<long>(c) - 1);
    std::vector<double> next = t;
    for (int s = 0; s < steps; ++s) {
        if (torus) {
            for (std::size_t c = 1; c <= grid_cols; ++c) {
                t[c] = t[grid_rows * w + c];
                t[(grid_rows + 1) * w + c] = t[w + c];
            }
            for (std::size_t r = 1; r <= grid_rows; ++r) {
                t[r * w] = t[r * w + grid_cols];
                t[r * w + grid_cols + 1] = t[r * w + 1];
            }
        }
        for (std::size_t r = 1; r <= grid_rows; ++r)
            for (std::size_t c = 1; c <= grid_cols; ++c) next[r * w + c] = five_point(t.data(), r * w + c, w);
        t.swap(next);
    }
    std::vector<double> inside;
    for (std::size_t r = 1; r <= grid_rows; ++r)
        inside.insert(inside.end(), t.begin() + static_cast<long>(r * w + 1),
                      t.begin() + static_cast<long>(r * w + grid_cols + 1));
    return inside;
}

// The tiles of every rank put back into one grid, row-major.
std::vector<double> join_tiles(const cc::cartesian& grid, const std::vector<std::vector<double>>& tiles,
                               std::size_t rows, std::size_t n) {
    const auto dims_of = grid.coords(grid.size() - 1);
    const std::size_t py = static_cast<std::size_t>(dims_of[0]) + 1, px = static_cast<std::size_t>(dims_of[1]) + 1;
    std::vector<double> all(py * rows * px * n);
    for (int rank = 0; rank < grid.size(); ++rank) {
        const auto at = grid.coords(rank);
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t c = 0; c < n; ++c)
                all[(static_cast<std::size_t>(at[0]) * rows + r) * px * n + static_cast<std::size_t>(at[1]) * n + c] =
                    tiles[static_cast<std::size_t>(rank)][r * n + c];
    }
    return all;
}

}  // namespace

// A 2-D decomposition exchanges its columns as strided parts of the
// field: the grid relaxed on 2 x 2, 2 x 3 and 3 x 1 tiles, with and
// without periodic axes, whole and split, matches one array relaxed
// alone, bit for bit (a 1 x 1 torus is its own neighbour on all four sides).
TEST(field_halo, columns_sent_as_strided_parts_relax_a_2d_grid_as_one_array_does) {
    constexpr std::size_t rows = 3, n = 4;
    constexpr int steps = 12;
    for (const auto& dims :
         {std::vector<int>{2, 2}, std::vector<int>{2, 3}, std::vector<int>{3, 1}, std::vector<int>{1, 1}})
        for (bool torus : {false, true})
            for (bool split : {false, true}) {
                const cc::cartesian grid(dims, {torus, torus});
                const auto py = static_cast<std::size_t>(dims[0]), px = static_cast<std::size_t>(dims[1]);
                std::vector<std::vector<double>> tiles;
                csp::run([&] {
                    tiles = cc::run_local(grid.size(), [&](cc::local_communicator& c) {
                        return relax_tile(c, grid, rows, n, steps, split);
                    });
                }, {.threads = 2});
                EXPECT_EQ(join_tiles(grid, tiles, rows, n), relaxed_grid(py * rows, px * n, steps, torus))
                    << dims[0] << " x " << dims[1] << (torus ? " torus" : "")
                    << (split ? " start/finish" : " exchange");
            }
}

// Between 4 nodes on a 2 x 2 torus, with columns of 34 KiB: the staged
// columns are lent, split-phase too (nothing changes a staging buffer
// before the next start), and land in their staging buffers; the rows of
// 48 bytes are copied.
TEST(field_halo, strided_columns_between_nodes_relax_a_torus_as_one_array_does) {
    constexpr std::size_t rows = 4300, n = 6;
    constexpr int steps = 4;
    const cc::cartesian grid({2, 2}, {true, true});
    std::vector<std::vector<double>> tiles(4);
    std::vector<std::size_t> lent(4);
    csp::net::nameserver ns;
    net_test::run_nodes(ns, "strided-halo", 4, [&](csp::net::node& self) {
        {
            cc::net_communicator comm(self);
            const auto r = static_cast<std::size_t>(self.rank());
            tiles[r] = relax_tile(comm, grid, rows, n, steps, self.rank() % 2 == 1, &lent[r]);
            cc::barrier(comm);
        }
        self.close();
    });
    EXPECT_TRUE(join_tiles(grid, tiles, rows, n) == relaxed_grid(2 * rows, 2 * n, steps, true))
        << "the grid differs from one array's";
    EXPECT_EQ(lent, std::vector<std::size_t>(4, 2 * steps));  // two columns a step
}

// A strided part whose blocks overlap, or whose last block is past the
// end of the field, is named.
TEST(field_halo, overlapping_blocks_or_a_strided_part_outside_the_field_are_named) {
    std::vector<std::string> what;
    csp::run([&] {
        cc::run_local(1, [&](cc::local_communicator& c) {
            std::vector<double> t(20);
            const std::vector<int> none{cc::no_rank, cc::no_rank};
            for (const auto& [out, in] : {std::pair{cc::strided{0, 3, 4, 3}, cc::strided{0, 2, 1, 5}},
                                          std::pair{cc::strided{0, 2, 1, 5}, cc::strided{2, 4, 1, 6}},
                                          std::pair{cc::strided{1, 2, 2, 19}, cc::strided{0, 2, 1, 5}}}) {
                try {
                    auto halo = cc::make_neighbour_exchange(c, none, t, {cc::row{0, 1}, out}, {cc::row{1, 1}, in});
                    halo.exchange();
                    what.emplace_back("exchanged");
                } catch (const csp::usage_error& e) {
                    what.emplace_back(e.what());
                }
            }
        });
    });
    EXPECT_EQ(what, (std::vector<std::string>{
                        "neighbour_exchange: send part 1 has blocks of 4 elements 3 apart: they overlap",
                        "neighbour_exchange: receive part 1 (4 blocks of 1, 6 apart, from element 2) is outside the "
                        "field of 20 elements",
                        "neighbour_exchange: send part 1 (2 blocks of 2, 19 apart, from element 1) is outside the "
                        "field of 20 elements"}));
}

namespace {

// A 3-D block of X x (rows + 2) x Z points (x fastest), cut along its
// middle axis y: a face y = const is Z blocks of X elements, X * (rows + 2)
// apart. Each rank's interior point (x, y, z) holds rank * 1000 + y * 100
// + x * 10 + z; after an exchange each ghost face must hold its
// neighbour's facing face. Returns how many ghost points were checked.
template <class C>
long faces_exchanged(C& comm, bool periodic, bool split) {
    constexpr std::size_t X = 4, rows = 3, Z = 5, Y = rows + 2;
    const auto at = [](std::size_t x, std::size_t y, std::size_t z) { return x + X * (y + Y * z); };
    const auto value = [](int rank, std::size_t x, std::size_t y, std::size_t z) {
        return rank * 1000.0 + static_cast<double>(y * 100 + x * 10 + z);
    };
    const auto nbs = cc::cartesian({comm.size()}, {periodic}).neighbours(comm.rank());
    std::vector<double> f(X * Y * Z, -1.0);
    for (std::size_t z = 0; z < Z; ++z)
        for (std::size_t y = 1; y <= rows; ++y)
            for (std::size_t x = 0; x < X; ++x) f[at(x, y, z)] = value(comm.rank(), x, y, z);
    const auto face = [&](std::size_t y) { return cc::strided{at(0, y, 0), Z, X, X * Y}; };
    auto halo = cc::make_neighbour_exchange(comm, nbs, f, {face(1), face(rows)}, {face(0), face(rows + 1)});
    exchange_once(halo, split);
    long checked = 0;
    for (std::size_t side = 0; side < 2; ++side) {
        const std::size_t ghost = side == 0 ? 0 : rows + 1, theirs = side == 0 ? rows : 1;
        for (std::size_t z = 0; z < Z; ++z)
            for (std::size_t x = 0; x < X; ++x) {
                const double want = nbs[side] == cc::no_rank ? -1.0 : value(nbs[side], x, theirs, z);
                EXPECT_EQ(f[at(x, ghost, z)], want) << "rank " << comm.rank() << " x " << x << " z " << z;
                checked += nbs[side] != cc::no_rank;
            }
    }
    // The interior is as it was.
    for (std::size_t z = 0; z < Z; ++z)
        for (std::size_t y = 1; y <= rows; ++y)
            for (std::size_t x = 0; x < X; ++x) EXPECT_EQ(f[at(x, y, z)], value(comm.rank(), x, y, z));
    return checked;
}

}  // namespace

// A rank that is its own neighbour on both axes (a 1 x 1 torus) copies its
// field's rows and columns across in place, with no message: whole, split
// with the sent edges overwritten between start() and finish() (the ghosts
// hold what start() found), and lent. Parts of other shapes are copied
// element by element (a row into blocks of two), and parts that share
// elements as a receive would have (from what the source held before).
TEST(field_halo, a_rank_its_own_neighbour_copies_field_parts_across_from_what_start_found) {
    constexpr std::size_t rows = 3, n = 4, w = n + 2;
    const auto cell = [](std::size_t r, std::size_t c) { return static_cast<double>(r * 10 + c); };
    for (int mode = 0; mode < 3; ++mode) {  // exchange, split copied, split lent
        cc::trace_log log;
        std::vector<double> t((rows + 2) * w, -1.0);
        csp::run([&] {
            cc::run_local(1, [&](cc::local_communicator& c) {
                cc::traced tc(c, log);
                for (std::size_t r = 1; r <= rows; ++r)
                    for (std::size_t col = 1; col <= n; ++col) t[r * w + col] = cell(r, col);
                auto halo =
                    cc::make_neighbour_exchange(tc, cc::cartesian({1, 1}, {true, true}).neighbours(0), t,
                                                {cc::row{w + 1, n}, cc::row{rows * w + 1, n},
                                                 cc::strided{w + 1, rows, 1, w}, cc::strided{w + n, rows, 1, w}},
                                                {cc::row{1, n}, cc::row{(rows + 1) * w + 1, n},
                                                 cc::strided{w, rows, 1, w}, cc::strided{w + n + 1, rows, 1, w}},
                                                {}, mode == 2 ? cc::sends::lent : cc::sends::copied);
                if (mode == 0) {
                    halo.exchange();
                } else {
                    halo.start();
                    if (mode == 1)
                        for (std::size_t r = 1; r <= rows; ++r)
                            for (std::size_t col = 1; col <= n; ++col) t[r * w + col] = 0.0;
                    halo.finish();
                }
            });
        });
        for (std::size_t col = 1; col <= n; ++col) {
            EXPECT_EQ(t[col], cell(rows, col)) << "mode " << mode;                 // top ghost: the bottom row
            EXPECT_EQ(t[(rows + 1) * w + col], cell(1, col)) << "mode " << mode;  // bottom ghost: the top row
        }
        for (std::size_t r = 1; r <= rows; ++r) {
            EXPECT_EQ(t[r * w], cell(r, n)) << "mode " << mode;          // left ghost: the right column
            EXPECT_EQ(t[r * w + n + 1], cell(r, 1)) << "mode " << mode;  // right ghost: the left column
        }
        EXPECT_EQ(t[0], -1.0) << "a corner is no part";
        EXPECT_TRUE(log.of_kind(cc::trace_event::kind::send).empty()) << "mode " << mode;
    }

    std::vector<double> f(24);
    for (std::size_t i = 0; i < f.size(); ++i) f[i] = static_cast<double>(i);
    csp::run([&] {
        cc::run_local(1, [&](cc::local_communicator& c) {
            // Side 1's row of 4 arrives as two blocks of two; side 0's two
            // single elements as a row.
            cc::make_neighbour_exchange(c, {0, 0}, f, {cc::row{0, 4}, cc::strided{4, 2, 1, 2}},
                                        {cc::row{12, 2}, cc::strided{16, 2, 2, 4}})
                .exchange();
            // A row received over elements 2..5, which it was sent from in part.
            cc::make_neighbour_exchange(c, {0, 0}, f, {cc::row{0, 4}, cc::row{10, 1}}, {cc::row{11, 1}, cc::row{2, 4}})
                .exchange();
        });
    });
    EXPECT_EQ(f[12], 4.0);
    EXPECT_EQ(f[13], 6.0);
    EXPECT_EQ((std::vector<double>(f.begin() + 16, f.begin() + 22)), (std::vector<double>{0, 1, 18, 19, 2, 3}));
    EXPECT_EQ((std::vector<double>(f.begin(), f.begin() + 6)), (std::vector<double>{0, 1, 0, 1, 2, 3}));
    EXPECT_EQ(f[11], 10.0);
}

// Strided parts whose blocks hold several elements: the faces of a 3-D
// block cut across its middle axis, on 3 ranks, bounded and periodic,
// whole and split, and between 3 nodes.
TEST(field_halo, faces_of_a_3d_block_go_as_strided_parts_of_several_elements) {
    for (bool periodic : {false, true})
        for (bool split : {false, true}) {
            long checked = 0;
            csp::run([&] {
                for (long c :
                     cc::run_local(3, [&](cc::local_communicator& c) { return faces_exchanged(c, periodic, split); }))
                    checked += c;
            });
            EXPECT_EQ(checked, (periodic ? 6 : 4) * 20L)
                << (periodic ? "periodic" : "bounded") << (split ? " split" : "");
        }
    std::atomic<long> checked{0};
    csp::net::nameserver ns;
    net_test::run_nodes(ns, "faces", 3, [&](csp::net::node& self) {
        {
            cc::net_communicator comm(self);
            checked += faces_exchanged(comm, true, self.rank() == 1);
            cc::barrier(comm);
        }
        self.close();
    });
    EXPECT_EQ(checked.load(), 6 * 20L);
}
