// Sends from the sender's memory (net/loans.hpp): the bytes are not copied,
// arrive intact, and settle() returns only once no message holds them,
// also when the peer dies before it read them.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <span>
#include <stdexcept>
#include <vector>

#include "csp/alt.hpp"
#include "csp/process.hpp"
#include "net/loans.hpp"
#include "net_fixture.hpp"

namespace {

using namespace std::chrono_literals;
using net_test::run_nodes;
using net_test::run_ranks;

std::vector<double> numbers(std::size_t n, double from) {
    std::vector<double> v(n);
    std::iota(v.begin(), v.end(), from);
    return v;
}

// Every size from none to 8 MiB arrives as sent, the message's bytes are
// the sender's own (nothing copied on the way out), and after settle() the
// sender may overwrite them without the receiver seeing it.
TEST(net_loans, lent_values_arrive_intact_and_may_change_once_settled) {
    csp::net::nameserver ns;
    const std::vector<std::size_t> sizes = {0, 3, 1024, 5000, 1u << 20};
    run_nodes(ns, "loans-intact", 2, [&](csp::net::node& self) {
        auto inbox = self.open(1);
        if (self.rank() == 0) {
            csp::net::loans book;
            for (std::size_t n : sizes) {
                auto v = numbers(n, static_cast<double>(n));
                const auto lent = book.lend(std::span<const double>(v));  // holds nothing itself
                if (n) {
                    const auto bytes = csp::net::encode(lent);
                    EXPECT_EQ(static_cast<const void*>(bytes.data()), static_cast<const void*>(v.data()));
                    EXPECT_EQ(bytes.size(), n * sizeof(double));
                }
                self.send(1, 1, lent);
                book.settle();
                std::fill(v.begin(), v.end(), -1.0);  // the receiver must not see this
            }
            EXPECT_EQ(book.lent_count(), 2 * (sizes.size() - 1));  // each encoding borrows; an empty span nothing
            EXPECT_EQ(inbox.receive<int>(), static_cast<int>(sizes.size()));
        } else {
            int intact = 0;
            for (std::size_t n : sizes) {
                const auto got = inbox.receive<std::vector<double>>();  // received as the vector it lends
                EXPECT_EQ(got, numbers(n, static_cast<double>(n))) << n << " doubles";
                intact += got == numbers(n, static_cast<double>(n));
            }
            self.send(0, 1, intact);
        }
    });
}

// A message lent to a port of this node is the sender's bytes in the
// receiver's hands: settle() waits until the receiver has dropped it.
TEST(net_loans, settle_waits_for_a_receiver_in_this_process_to_drop_the_message) {
    csp::net::nameserver ns;
    run_nodes(ns, "loans-self", 1, [&](csp::net::node& self) {
        auto inbox = self.open(4);
        const auto v = numbers(100000, 1.0);
        csp::net::loans book;
        self.send(0, 4, book.lend(std::span<const double>(v)));
        std::vector<int> order;
        csp::par(
            [&] {
                book.settle();
                order.push_back(3);
            },
            [&] {
                csp::select(csp::timeout(50ms));  // the settle is waiting by now
                {
                    const csp::net::message m = inbox.receive();
                    EXPECT_EQ(static_cast<const void*>(m.body.data()), static_cast<const void*>(v.data()));
                    EXPECT_EQ(m.as<std::vector<double>>(), v);
                    order.push_back(1);
                }
                order.push_back(2);  // dropped
            });
        ASSERT_EQ(order.size(), 3u);
        EXPECT_EQ(order.front(), 1);
        EXPECT_EQ(order.back(), 3);
    });
}

// A value lent where bytes cannot be sent as they are (a local channel) is
// copied, like the span it lends.
TEST(net_loans, a_lent_value_received_as_its_vector_owns_a_copy) {
    const auto v = numbers(10, 0.0);
    csp::net::loans book;
    const auto lent = book.lend(std::span<const double>(v));
    const std::vector<double> copy = csp::owned(lent);
    EXPECT_EQ(copy, v);
    EXPECT_NE(copy.data(), v.data());
    const auto bytes = csp::net::encode(lent);
    EXPECT_EQ(static_cast<const void*>(bytes.data()), static_cast<const void*>(v.data()));
    EXPECT_EQ(csp::net::wire_type<csp::net::lent<double>>(), csp::net::wire_type<std::vector<double>>());
}

// A book moved while a message is out on loan takes it along: the new book
// settles for it, the old one has nothing to wait for. (So a
// neighbour_exchange, which keeps a book, stays movable.)
TEST(net_loans, a_moved_book_settles_for_what_was_lent_before_the_move) {
    csp::net::nameserver ns;
    run_nodes(ns, "loans-moved", 1, [&](csp::net::node& self) {
        auto inbox = self.open(4);
        const auto v = numbers(50000, 2.0);
        csp::net::loans first;
        self.send(0, 4, first.lend(std::span<const double>(v)));
        csp::net::loans second(std::move(first));
        first.settle();  // nothing left to wait for: returns at once
        EXPECT_EQ(first.lent_count(), 0u);
        EXPECT_EQ(second.lent_count(), 1u);
        bool received = false, settled_after_receive = false;
        csp::par(
            [&] {
                second.settle();
                settled_after_receive = received;
            },
            [&] {
                csp::select(csp::timeout(30ms));
                const csp::net::message m = inbox.receive();
                received = true;
                EXPECT_EQ(m.as<std::vector<double>>(), v);
            });
        EXPECT_TRUE(settled_after_receive);
    });
}

// Regression (a_lent_message_to_a_peer_killed_before_it_read_it_is_dropped):
// frames left in a lost link's queue, or in the writer's hands when the
// connection broke, stayed until the node ended, so a lender waiting for
// them would have waited for ever. The peer is stopped before it can read
// 12 MiB (more than the sockets hold, and UCX's rendezvous needs the
// receiver), then killed: settle() returns, and not before the kill.
TEST(net_loans, a_lent_message_to_a_peer_killed_before_it_read_it_is_dropped) {
    csp::net::nameserver ns;
    const pid_t pid = net_test::spawn_ready_node(NET_TEST_PEER, {"hold"}, ns, "loans-killed", 1, 2);
    std::atomic<bool> killed{false};
    bool settled_after_kill = false;
    run_ranks(ns, "loans-killed", 2, {0}, [&](csp::net::node& self) {
        auto back = self.open(2);
        self.send(1, 1, std::uint64_t{7});
        ASSERT_EQ(back.receive<std::uint64_t>(), 7u);  // the link is up
        ASSERT_EQ(::kill(pid, SIGSTOP), 0);
        const auto big = numbers(std::size_t{3} << 19, 0.0);  // 12 MiB: inside the flow control window
        csp::net::loans book;
        csp::par(
            [&] {
                self.send(1, 5, book.lend(std::span<const double>(big)));
                book.settle();
                settled_after_kill = killed.load();
            },
            [&] {
                csp::select(csp::timeout(300ms));
                killed = true;
                ::kill(pid, SIGKILL);
            });
    });
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status));
    EXPECT_TRUE(settled_after_kill);
}

}  // namespace
