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
#include "collectives/net_communicator.hpp"
#include "csp/runtime.hpp"
#include "net/net.hpp"
#include "test/net/net_fixture.hpp"

namespace cc = csp::collectives;

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
        return std::string(t == csp::net::transport_kind::tcp ? "tcp" : t == csp::net::transport_kind::ucx ? "ucx" : "auto") +
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
