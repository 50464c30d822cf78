// Receiving into the caller's memory (net/landing.hpp) through a net
// communicator: a large message lands in the buffer named for it, only
// there and only if it is of the buffer's type and fits; a landing ends
// cleanly when its sender left; Rabenseifner's allreduce, whose doubling
// steps land blocks in the result, still computes every element.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "collectives/collectives.hpp"
#include "collectives/hybrid_communicator.hpp"
#include "collectives/net_communicator.hpp"
#include "csp/runtime.hpp"
#include "net/net.hpp"
#include "test/net/net_fixture.hpp"

namespace cc = csp::collectives;

// How ctest's listing and gtest show a transport (found by argument-dependent
// lookup, so in the enum's namespace).
namespace csp::net {
void PrintTo(transport_kind t, std::ostream* os) {
    *os << (t == transport_kind::tcp ? "tcp" : t == transport_kind::ucx ? "ucx" : "auto");
}
}  // namespace csp::net

namespace {

// Rank 0 names `ghost` for rank 1's message with tag t, then (after `arm`)
// tells rank 1 to send `row`; rank 1 waits for that word, so the row's
// header always finds the landing in place. `receive` is rank 0's receive
// (its errors propagate).
template <class Row>
void land_one(csp::net::node& self, const Row& row, std::vector<double>& ghost,
              const std::function<void(cc::net_communicator&, csp::net::landing&)>& arm,
              const std::function<void(cc::net_communicator&, cc::tag)>& receive) {
    cc::net_communicator comm(self);
    const cc::tag t = comm.next_tag(), go = comm.next_tag();
    if (comm.rank() == 0) {
        csp::net::landing l = comm.land(1, t, std::span<double>(ghost));
        arm(comm, l);
        comm.send(1, go, 1);
        receive(comm, t);
    } else {
        (void)comm.receive<int>(0, go);
        comm.send(1 - comm.rank(), t, row);
    }
    cc::barrier(comm);
}

}  // namespace

// The landing's outcomes, each with a row whose header arrives while the
// landing is in place (or after it was withdrawn): received in place,
// refused (of another type, or too long: the receive names what is wrong and
// the buffer is untouched), or withdrawn first (received as usual). Over
// UCX (where built) and over TCP, with rows of 128 KiB (over TCP read from
// the link's read buffer) and 512 KiB (read from the socket straight into
// the landing).
class net_landing_outcomes : public ::testing::TestWithParam<std::tuple<csp::net::transport_kind, std::size_t>> {};

TEST_P(net_landing_outcomes, a_row_lands_only_in_a_buffer_named_for_it_and_of_its_type_and_size) {
    const auto [transport, n] = GetParam();
    csp::net::nameserver ns;
    auto job = [&](const std::string& name, auto row, auto arm, auto receive, std::vector<double>& ghost,
                   std::size_t& landed, bool& ucx) {
        net_test::run_nodes(
            ns, name, 2,
            [&](csp::net::node& self) {
                land_one(self, row, ghost, arm, receive);
                if (self.rank() == 0) {
                    landed = self.stats().landed;
                    ucx = self.stats().links_over_ucx > 0;
                }
                self.close();
            },
            1, [&](int, csp::net::node_options& o) { o.transport = transport; });
    };
    std::vector<double> row(n);
    for (std::size_t k = 0; k < row.size(); ++k) row[k] = 0.5 * static_cast<double>(k);
    const std::vector<double> untouched(n, -1.0);
    auto keep = [](cc::net_communicator&, csp::net::landing&) {};

    {  // lands: the values arrive where they belong, counted once
        std::vector<double> ghost(untouched);
        std::size_t landed = 0;
        bool ucx = false;
        job("land-in-place", row, keep,
            [&](cc::net_communicator& comm, cc::tag t) {
                EXPECT_EQ(comm.receive_into(1, t, std::span<double>(ghost)), n);
            },
            ghost, landed, ucx);
        EXPECT_EQ(ghost, row);
        EXPECT_EQ(landed, 1u);  // by UCX's rendezvous, or read by the TCP link
        if (transport == csp::net::transport_kind::tcp) {
            EXPECT_FALSE(ucx);
        }
#if CSP_TEST_WITH_UCX
        if (transport == csp::net::transport_kind::ucx) {
            EXPECT_TRUE(ucx);
        }
#endif
    }
    {  // withdrawn before the row was sent: received as usual, buffer untouched until then
        std::vector<double> ghost(untouched);
        std::vector<double> seen;
        std::size_t landed = 0;
        bool ucx = false;
        job("land-withdrawn", row, [](cc::net_communicator&, csp::net::landing& l) { l.end(); },
            [&](cc::net_communicator& comm, cc::tag t) {
                const auto m = comm.receive<std::vector<double>>(1, t);
                seen = ghost;
                EXPECT_EQ(m, row);
            },
            ghost, landed, ucx);
        EXPECT_EQ(seen, untouched);
        EXPECT_EQ(landed, 0u);
    }
    {  // of another type: not landed; the receive names both types
        std::vector<double> ghost(untouched);
        std::vector<float> floats(2 * n, 2.0f);
        std::size_t landed = 0;
        bool ucx = false;
        job("land-other-type", floats, keep,
            [&](cc::net_communicator& comm, cc::tag t) {
                try {
                    comm.receive_into(1, t, std::span<double>(ghost));
                    ADD_FAILURE() << "a vector of float was received into doubles";
                } catch (const csp::net::decode_error& e) {
                    EXPECT_NE(std::string(e.what()).find("float"), std::string::npos) << e.what();
                }
            },
            ghost, landed, ucx);
        EXPECT_EQ(ghost, untouched);
        EXPECT_EQ(landed, 0u);
    }
    {  // longer than the buffer: not landed; the receive says it does not fit
        std::vector<double> ghost(untouched);
        std::vector<double> longer(n + 3616, 3.0);
        std::size_t landed = 0;
        bool ucx = false;
        job("land-too-long", longer, keep,
            [&](cc::net_communicator& comm, cc::tag t) {
                try {
                    comm.receive_into(1, t, std::span<double>(ghost));
                    ADD_FAILURE() << longer.size() << " doubles were received into " << n;
                } catch (const csp::net::decode_error& e) {
                    EXPECT_NE(std::string(e.what()).find("does not fit"), std::string::npos) << e.what();
                }
            },
            ghost, landed, ucx);
        EXPECT_EQ(ghost, untouched);
        EXPECT_EQ(landed, 0u);
    }
}

INSTANTIATE_TEST_SUITE_P(
    transports, net_landing_outcomes,
    ::testing::Combine(::testing::Values(csp::net::transport_kind::automatic, csp::net::transport_kind::tcp
#if CSP_TEST_WITH_UCX
                                         , csp::net::transport_kind::ucx
#endif
                                         ),
                       ::testing::Values(std::size_t{16384}, std::size_t{65536})),
    [](const auto& info) {
        const auto t = std::get<0>(info.param);
        return std::string(t == csp::net::transport_kind::tcp   ? "tcp"
                           : t == csp::net::transport_kind::ucx ? "ucx"
                                                                : "auto") +
               "_" + std::to_string(std::get<1>(info.param));
    });

// Rank 0 names a buffer for rank 1's message, then rank 1 leaves without
// sending it: the receive fails naming the peer, the landing ends at once
// (nothing was being written), and the buffer is untouched.
TEST(net_landing, a_landing_whose_sender_left_ends_with_the_failed_receive) {
    csp::net::nameserver ns;
    std::vector<double> ghost(16384, -1.0);
    std::atomic<int> failed{0};
    net_test::run_nodes(ns, "land-left", 2, [&](csp::net::node& self) {
        {
            cc::net_communicator comm(self);
            const cc::tag t = comm.next_tag();
            if (comm.rank() == 0) {
                csp::net::landing l = comm.land(1, t, std::span<double>(ghost));
                try {
                    comm.receive_into(1, t, std::span<double>(ghost));
                    ADD_FAILURE() << "a message came from a rank that sent none";
                } catch (const csp::net::peer_error& e) {
                    EXPECT_NE(std::string(e.what()).find("1"), std::string::npos) << e.what();
                    ++failed;
                }
            }
        }
        self.close();
    });
    EXPECT_EQ(failed.load(), 1);
    EXPECT_EQ(ghost, std::vector<double>(16384, -1.0));
}

// Rabenseifner's allreduce on 4 nodes, vectors of 40,000 doubles (blocks
// of 80 KiB and 160 KiB in its doubling steps, split frames over UCX):
// every element of every result is the sum, however many blocks landed.
TEST(net_landing, rabenseifner_allreduce_lands_doubling_blocks_and_sums_every_element) {
    csp::net::nameserver ns;
    std::atomic<long> right{0};
    std::atomic<std::size_t> landed{0};
    constexpr std::size_t n = 40000;
    constexpr int rounds = 6;
    net_test::run_nodes(ns, "land-rabenseifner", 4, [&](csp::net::node& self) {
        {
            cc::net_communicator comm(self);
            for (int round = 0; round < rounds; ++round) {
                std::vector<double> v(n);
                for (std::size_t k = 0; k < n; ++k) v[k] = comm.rank() * 1000.0 + round + static_cast<double>(k % 97);
                const auto sum = cc::allreduce_rabenseifner(comm, std::move(v), cc::sum{});
                ASSERT_EQ(sum.size(), n);
                for (std::size_t k = 0; k < n; ++k)
                    right += sum[k] == 6000.0 + 4.0 * (round + static_cast<double>(k % 97));
            }
            cc::barrier(comm);
            landed += self.stats().landed;
        }
        self.close();
    });
    EXPECT_EQ(right.load(), 4L * rounds * static_cast<long>(n));
    // Each rank's two doubling steps land at most one block each per call.
    EXPECT_LE(landed.load(), 4u * 2 * rounds);
}

#if CSP_TEST_WITH_UCX
namespace {

using namespace std::chrono_literals;

// Waits (sleeping, so the node's processes run) until pred() holds or 20 s
// have passed; returns whether it held.
bool eventually(const std::function<bool()>& pred) {
    const auto limit = std::chrono::steady_clock::now() + 20s;
    while (!pred()) {
        if (std::chrono::steady_clock::now() > limit) return false;
        csp::sleep_for(200us);
    }
    return true;
}

// What rank 0 saw of rank 1's 128 KiB row, expected with tag t before rank 1
// sends it; `then` is rank 0's part once the row is held (or, if
// `wait_held` is false, at once). With `small_behind`, rank 1 sends a small
// message right behind the row.
struct expected_outcome {
    std::vector<double> ghost = std::vector<double>(16384, -1.0);
    std::size_t landed = 0;
    std::size_t held_after = 1;
    bool was_held = false;
};

std::vector<double> numbered_row() {
    std::vector<double> row(16384);
    for (std::size_t k = 0; k < row.size(); ++k) row[k] = 0.25 * static_cast<double>(k);
    return row;
}

// `send_row`, if given, is rank 1's send instead of numbered_row().
expected_outcome expect_one(
    const std::string& job, std::chrono::microseconds hold, bool wait_held, bool small_behind,
    const std::function<void(cc::net_communicator&, cc::tag, csp::net::landing&, expected_outcome&)>& then,
    const std::function<void(cc::net_communicator&, cc::tag)>& send_row = {}) {
    const auto row = numbered_row();
    expected_outcome out;
    csp::net::nameserver ns;
    net_test::run_nodes(
        ns, job, 2,
        [&](csp::net::node& self) {
            {
                cc::net_communicator comm(self);
                const cc::tag t = comm.next_tag(), go = comm.next_tag(), behind = comm.next_tag(),
                              done = comm.next_tag();
                if (comm.rank() == 0) {
                    csp::net::landing e = comm.expect(1, t);
                    comm.send(1, go, 1);
                    if (wait_held) out.was_held = eventually([&] { return self.stats().held == 1; });
                    if (small_behind) {
                        EXPECT_EQ(comm.receive<int>(1, behind), 7);
                    }
                    then(comm, t, e, out);
                    out.landed = self.stats().landed;
                    out.held_after = self.stats().held;
                    comm.send(1, done, 1);
                } else {
                    (void)comm.receive<int>(0, go);
                    if (send_row) send_row(comm, t);
                    else comm.send(0, t, row);
                    if (small_behind) comm.send(0, behind, 7);
                    // Nothing else to rank 0 until it is done: a message
                    // behind the row would end its hold.
                    (void)comm.receive<int>(0, done);
                }
                cc::barrier(comm);
            }
            self.close();
        },
        1,
        [&](int, csp::net::node_options& o) {
            o.transport = csp::net::transport_kind::ucx;
            o.expected_hold = hold;
        });
    return out;
}

// The row reached rank 0's ghost whole, `landed` times straight into it,
// and nothing stays held.
void expect_row_received(const expected_outcome& out, std::size_t landed) {
    EXPECT_EQ(out.ghost, numbered_row());
    EXPECT_EQ(out.landed, landed);
    EXPECT_EQ(out.held_after, 0u);
}

}  // namespace

// An expected row that comes before its buffer is named waits, with its
// bytes at the sender, and is then fetched straight into the buffer.
TEST(net_expected_landing, a_row_that_comes_before_its_landing_is_held_and_then_lands) {
    const auto out = expect_one("expect-held", 60s, true, false,
                                [](cc::net_communicator& comm, cc::tag t, csp::net::landing&, expected_outcome& o) {
                                    csp::net::landing l = comm.land(1, t, std::span<double>(o.ghost));
                                    EXPECT_EQ(comm.receive_into(1, t, std::span<double>(o.ghost)), o.ghost.size());
                                });
    EXPECT_TRUE(out.was_held);
    expect_row_received(out, 1);
}

// Regression: a hold of microseconds::max() (hold until the buffer is
// named, however long) overflowed now() + hold into the past (signed
// overflow, which the sanitizer build stops at); the hold's end saturates.
TEST(net_expected_landing, a_hold_of_the_largest_duration_holds_until_the_landing) {
    const auto out = expect_one("expect-held-forever", std::chrono::microseconds::max(), true, false,
                                [](cc::net_communicator& comm, cc::tag t, csp::net::landing&, expected_outcome& o) {
                                    csp::net::landing l = comm.land(1, t, std::span<double>(o.ghost));
                                    EXPECT_EQ(comm.receive_into(1, t, std::span<double>(o.ghost)), o.ghost.size());
                                });
    EXPECT_TRUE(out.was_held);
    expect_row_received(out, 1);
}

// An expectation withdrawn while its row is held lets the row go at once
// (received as usual: the hold limit here is a minute, under the watchdog).
TEST(net_expected_landing, a_withdrawn_expectation_lets_its_held_row_be_received_as_usual) {
    const auto out = expect_one("expect-withdrawn", 60s, true, false,
                                [](cc::net_communicator& comm, cc::tag t, csp::net::landing& e, expected_outcome& o) {
                                    e.end();
                                    EXPECT_EQ(comm.receive_into(1, t, std::span<double>(o.ghost)), o.ghost.size());
                                });
    EXPECT_TRUE(out.was_held);
    expect_row_received(out, 0);
}

// A message of the same sender that comes behind a held row does not wait
// for the row's landing: rank 0 takes it first, then the row, never landed.
TEST(net_expected_landing, a_message_behind_a_held_row_is_not_held_up_by_it) {
    const auto out = expect_one("expect-behind", 60s, false, true,
                                [](cc::net_communicator& comm, cc::tag t, csp::net::landing&, expected_outcome& o) {
                                    EXPECT_EQ(comm.receive_into(1, t, std::span<double>(o.ghost)), o.ghost.size());
                                });
    expect_row_received(out, 0);
}

// A held row that turns out not to fit its buffer when the buffer is named
// (of another type, or longer) is received as usual: the receive names what
// is wrong, and the buffer is untouched.
TEST(net_expected_landing, a_held_row_that_does_not_fit_its_landing_is_received_as_usual_and_refused_by_name) {
    struct refused {
        const char* job;
        std::function<void(cc::net_communicator&, cc::tag)> send_row;
        const char* says;
    };
    const std::vector<refused> cases{
        {"expect-other-type", [](cc::net_communicator& c, cc::tag t) { c.send(0, t, std::vector<float>(32768, 2.0f)); },
         "float"},
        {"expect-too-long",
         [](cc::net_communicator& c, cc::tag t) { c.send(0, t, std::vector<double>(16384 + 3616, 3.0)); },
         "does not fit"},
    };
    for (const auto& c : cases) {
        const auto out = expect_one(
            c.job, 60s, true, false,
            [&](cc::net_communicator& comm, cc::tag t, csp::net::landing&, expected_outcome& o) {
                csp::net::landing l = comm.land(1, t, std::span<double>(o.ghost));
                try {
                    comm.receive_into(1, t, std::span<double>(o.ghost));
                    ADD_FAILURE() << c.job << ": the row was received";
                } catch (const csp::net::decode_error& e) {
                    EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
                }
            },
            c.send_row);
        EXPECT_TRUE(out.was_held) << c.job;
        EXPECT_EQ(out.ghost, std::vector<double>(16384, -1.0)) << c.job;
        EXPECT_EQ(out.landed, 0u) << c.job;
        EXPECT_EQ(out.held_after, 0u) << c.job;
    }
}

// A held row whose landing does not come within the hold limit is received
// as usual: it stops being held by itself.
TEST(net_expected_landing, a_row_held_past_the_hold_limit_is_received_as_usual) {
    const auto out = expect_one("expect-limit", 2ms, false, false,
                                [](cc::net_communicator& comm, cc::tag t, csp::net::landing&, expected_outcome& o) {
                                    // The row comes, is held for 2 ms at most, then fetched.
                                    EXPECT_TRUE(eventually([&] { return comm.unclaimed() > 0; }));
                                    EXPECT_EQ(comm.receive_into(1, t, std::span<double>(o.ghost)), o.ghost.size());
                                });
    expect_row_received(out, 0);
}

namespace {

// Row i of a stream: numbered_row() shifted by i million.
std::vector<double> stream_row(int i) {
    auto row = numbered_row();
    for (double& x : row) x += i * 1e6;
    return row;
}

// Rank 1 sends `rows` stream rows back to back with tags rank 0 expected
// (hold limit a minute); `then` is rank 0's part once `wait_held` rows are
// held (was_held: they were at once). `window`: rank 1's flow-control window
// (node_options::window), if not 0.
void expect_rows(const std::string& job, int rows,
                 const std::function<void(csp::net::node&, cc::net_communicator&, const std::vector<cc::tag>&)>& then,
                 bool& was_held, int wait_held = -1, std::uint32_t window = 0) {
    if (wait_held < 0) wait_held = rows;
    csp::net::nameserver ns;
    net_test::run_nodes(
        ns, job, 2,
        [&](csp::net::node& self) {
            {
                cc::net_communicator comm(self);
                std::vector<cc::tag> t;
                for (int i = 0; i < rows; ++i) t.push_back(comm.next_tag());
                const cc::tag go = comm.next_tag(), done = comm.next_tag();
                if (comm.rank() == 0) {
                    std::vector<csp::net::landing> expected;
                    for (const cc::tag x : t) expected.push_back(comm.expect(1, x));
                    comm.send(1, go, 1);
                    was_held = eventually([&] { return self.stats().held == static_cast<std::size_t>(wait_held); });
                    then(self, comm, t);
                    comm.send(1, done, 1);
                } else {
                    (void)comm.receive<int>(0, go);
                    for (int i = 0; i < rows; ++i) comm.send(0, t[static_cast<std::size_t>(i)], stream_row(i));
                    (void)comm.receive<int>(0, done);
                }
                cc::barrier(comm);
            }
            self.close();
        },
        1,
        [&](int, csp::net::node_options& o) {
            o.transport = csp::net::transport_kind::ucx;
            o.expected_hold = 60s;
            if (window != 0) o.window = window;
        });
}

// What rank 0 got of a stream, each row landed in turn in one buffer.
struct stream_outcome {
    std::vector<std::vector<double>> got;  // the buffer after each row
    std::size_t landed = 0, held_after = 1;
};

void land_each_in_one_buffer(csp::net::node& self, cc::net_communicator& comm, const std::vector<cc::tag>& t,
                             stream_outcome& out) {
    std::vector<double> buffer(16384, -1.0);
    for (const cc::tag x : t) {
        csp::net::landing l = comm.land(1, x, std::span<double>(buffer));
        EXPECT_EQ(comm.receive_into(1, x, std::span<double>(buffer)), buffer.size());
        out.got.push_back(buffer);
    }
    out.landed = self.stats().landed;
    out.held_after = self.stats().held;
}

// Every row reached the buffer whole and straight, and nothing stays held.
void expect_every_row_landed(const stream_outcome& out, int rows) {
    ASSERT_EQ(out.got.size(), static_cast<std::size_t>(rows));
    for (int i = 0; i < rows; ++i) EXPECT_EQ(out.got[static_cast<std::size_t>(i)], stream_row(i)) << "row " << i;
    EXPECT_EQ(out.landed, static_cast<std::size_t>(rows));
    EXPECT_EQ(out.held_after, 0u);
}

}  // namespace

// A sender's expected rows sent back to back are each held for its own
// landing (a later one does not let an earlier one go), and a receiver that
// names one buffer for each in turn gets every row there, as an MPI
// receiver posting one receive after another into one buffer does.
TEST(net_expected_landing, expected_rows_sent_back_to_back_are_each_held_and_land_in_one_buffer) {
    constexpr int rows = 4;
    bool was_held = false;
    stream_outcome out;
    expect_rows(
        "expect-stream", rows,
        [&](csp::net::node& self, cc::net_communicator& comm, const std::vector<cc::tag>& t) {
            land_each_in_one_buffer(self, comm, t, out);
        },
        was_held);
    EXPECT_TRUE(was_held);
    expect_every_row_landed(out, rows);
}

// The same where the sender's window holds two rows: its third send waits
// and asks for credit. The ask comes behind the two held rows and must let
// neither go (nor wait for them): rank 0 names its buffer row by row, each
// take credits the sender, and every row lands. (The ask used to release
// the held rows into blocks of their own: a 16-message stream of 1 MiB
// against the 16 MiB window landed 3 of 16.)
TEST(net_expected_landing, an_ask_for_credit_behind_held_rows_lets_none_go_and_every_row_lands) {
    constexpr int rows = 5;
    constexpr std::uint32_t row_charge = 16384 * sizeof(double) + 128;  // flow_control.hpp's charge
    bool was_held = false;
    stream_outcome out;
    std::size_t held_before = 0, unclaimed_before = 1;
    expect_rows(
        "expect-window", rows,
        [&](csp::net::node& self, cc::net_communicator& comm, const std::vector<cc::tag>& t) {
            // The third row's send waits for credit and asks for it; the
            // ask is here well within this.
            csp::sleep_for(50ms);
            held_before = self.stats().held;
            unclaimed_before = comm.unclaimed();
            land_each_in_one_buffer(self, comm, t, out);
        },
        was_held, 2, 2 * row_charge + 64);
    EXPECT_TRUE(was_held);
    EXPECT_EQ(held_before, 2u);
    EXPECT_EQ(unclaimed_before, 0u);
    expect_every_row_landed(out, rows);
}

// Naming the buffer of a held row lets the held rows of its sender before it
// go at once, as usual (into blocks): the named one is handed out after
// them, and they must not wait for landings that may never come.
TEST(net_expected_landing, landing_a_later_held_row_lets_the_held_rows_before_it_go_as_usual) {
    bool was_held = false;
    std::vector<double> first(16384, -1.0), second(16384, -1.0);
    std::size_t held_after_landing = 3, landed = 0;
    expect_rows(
        "expect-later-first", 3,
        [&](csp::net::node& self, cc::net_communicator& comm, const std::vector<cc::tag>& t) {
            csp::net::landing l = comm.land(1, t[1], std::span<double>(second));
            held_after_landing = self.stats().held;  // the first let go, the second fetched, the third still held
            EXPECT_EQ(comm.receive_into(1, t[0], std::span<double>(first)), first.size());
            EXPECT_EQ(comm.receive_into(1, t[1], std::span<double>(second)), second.size());
            landed = self.stats().landed;
            std::vector<double> third(16384, -1.0);
            csp::net::landing l3 = comm.land(1, t[2], std::span<double>(third));
            EXPECT_EQ(comm.receive_into(1, t[2], std::span<double>(third)), third.size());
            EXPECT_EQ(third, stream_row(2));
        },
        was_held);
    EXPECT_TRUE(was_held);
    EXPECT_EQ(held_after_landing, 1u);
    EXPECT_EQ(landed, 1u);
    EXPECT_EQ(first, stream_row(0));
    EXPECT_EQ(second, stream_row(1));
}

namespace {

// `steps` exchanges of 128 KiB rows down a column of comm's ranks (exchange(),
// or start() then finish() if `split`), each row numbered by its rank, step
// and element; returns how many sampled ghost elements were not the
// neighbour's, and adds the rows this rank received to `rows`.
template <class C>
long halo_steps(C& comm, int steps, bool split, std::atomic<std::size_t>& rows) {
    constexpr std::size_t width = 16384;
    const int rank = comm.rank();
    const auto nbs = cc::cartesian({comm.size()}).neighbours(rank);
    std::vector<double> top(width), bottom(width), above(width), below(width);
    auto halo = cc::make_neighbour_exchange<double>(comm, nbs, {top, bottom}, {above, below});
    long wrong = 0;
    for (int s = 0; s < steps; ++s) {
        for (std::size_t k = 0; k < width; ++k) {
            top[k] = rank * 1e6 + s + static_cast<double>(k);
            bottom[k] = -(rank * 1e6 + s) - static_cast<double>(k);
        }
        if (split) {
            halo.start();
            halo.finish();
        } else {
            halo.exchange();
        }
        for (std::size_t k = 0; k < width; k += 1021) {
            if (nbs[0] != cc::no_rank) wrong += above[k] != -(nbs[0] * 1e6 + s) - static_cast<double>(k);
            if (nbs[1] != cc::no_rank) wrong += below[k] != nbs[1] * 1e6 + s + static_cast<double>(k);
        }
    }
    rows += static_cast<std::size_t>(steps) * ((nbs[0] != cc::no_rank) + (nbs[1] != cc::no_rank));
    return wrong;
}

}  // namespace

// The halo exchange over UCX, 4 ranks in a column, 128 KiB rows, sent from
// the buffers (exchange()) and copied (start(), finish()), on one worker
// thread per node and (exchange()) on two: with the hold
// limit out of reach, every row after the first exchange's lands, held if
// its sender was a step ahead, and every ghost holds its neighbour's row.
TEST(net_expected_landing, a_neighbour_exchange_lands_every_row_after_its_first_step) {
    constexpr int steps = 200;
    csp::net::nameserver ns;
    std::atomic<long> wrong{0};
    for (const auto& [split, threads] : {std::pair{false, std::size_t{1}}, std::pair{true, std::size_t{1}},
                                         std::pair{false, std::size_t{2}}}) {
        const std::string job = std::string(split ? "expect-halo-split-" : "expect-halo-") + std::to_string(threads);
        std::atomic<std::size_t> landed{0}, rows{0};
        net_test::run_nodes(
            ns, job, 4,
            [&](csp::net::node& self) {
                {
                    cc::net_communicator comm(self);
                    wrong += halo_steps(comm, steps, split, rows);
                    cc::barrier(comm);
                    landed += self.stats().landed;
                }
                self.close();
            },
            threads,
            [](int, csp::net::node_options& o) {
                o.transport = csp::net::transport_kind::ucx;
                o.expected_hold = 60s;
            });
        // Each rank's rows of the first exchange may come before it starts.
        EXPECT_GE(landed.load(), rows.load() / steps * (steps - 1)) << job;
        EXPECT_LE(landed.load(), rows.load()) << job;
    }
    EXPECT_EQ(wrong.load(), 0);
}
#endif

#if CSP_TEST_WITH_UCX
// The same halo over a hybrid job of 2 nodes x 2 fibers (ranks 0, 1 on node
// 0; 2, 3 on node 1): the rows between ranks 1 and 2 cross the nodes and,
// after the first step, land in their ghosts; the others come through
// mailboxes. Every ghost holds its neighbour's row.
TEST(net_expected_landing, a_hybrid_neighbour_exchange_lands_the_rows_that_cross_nodes) {
    constexpr int steps = 100;
    csp::net::nameserver ns;
    std::atomic<long> wrong{0};
    std::atomic<std::size_t> landed{0}, rows{0};
    net_test::run_nodes(
        ns, "expect-hybrid-halo", 2,
        [&](csp::net::node& self) {
            {
                cc::hybrid_job job(self, 2);
                job.run([&](cc::hybrid_communicator& comm) {
                    wrong += halo_steps(comm, steps, false, rows);
                    cc::barrier(comm);
                });
                landed += self.stats().landed;
            }
            self.close();
        },
        1,
        [](int, csp::net::node_options& o) {
            o.transport = csp::net::transport_kind::ucx;
            o.expected_hold = 60s;
        });
    EXPECT_EQ(wrong.load(), 0);
    // Two rows cross per step (1 -> 2 and 2 -> 1); the first step's may come early.
    EXPECT_GE(landed.load(), 2u * (steps - 1));
    EXPECT_LE(landed.load(), 2u * steps);
}
#endif
