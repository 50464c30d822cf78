// A claimed port whose messages go to a sink (net/port_sink.hpp): order,
// messages that came before the claim, credit, failures, release.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <stdexcept>
#include <utility>
#include <string>
#include <vector>

#include "csp/alt.hpp"
#include "csp/timer.hpp"
#include "net_fixture.hpp"

using net_test::run_nodes;

namespace {

constexpr csp::net::port_id data_port = 40;
constexpr csp::net::port_id control_port = 41;

// Records what it is handed; signals `done` once it holds `expected`
// messages (a one-place buffer, written once: the write never blocks).
class recorder final : public csp::net::port_sink {
public:
    explicit recorder(std::size_t expected) : expected_(expected) {}

    void deliver(csp::net::message m) noexcept override {
        if (m.failure) {
            failures.push_back(m.failure->peer());
            order.push_back(-1 - m.failure->peer());
        } else {
            by_source[m.source].push_back(m.as<int>());
            order.push_back(m.source);
        }
        calls.fetch_add(1, std::memory_order_relaxed);
        if (++held_ == expected_) done.writer().write(true);
    }

    csp::channel<bool> done{csp::buffer::fifo(1)};
    std::map<int, std::vector<int>> by_source;
    std::vector<int> failures;
    std::vector<int> order;  // sources in order of delivery; -1 - peer for a failure
    std::atomic<std::size_t> calls{0};

    // Waits until it holds what it expects; throws if that takes over 20 s
    // (a message lost or not credited would otherwise hang the test).
    void wait() {
        bool ignored;
        if (csp::select(csp::input(done.reader(), ignored), csp::timeout(std::chrono::seconds(20))) != 0)
            throw std::runtime_error("the sink holds " + std::to_string(held_) + " of " + std::to_string(expected_) +
                                     " messages after 20 s");
    }

private:
    std::size_t expected_;
    std::size_t held_ = 0;
};

// Each of nodes 1..n-1 sends `count` ints 0..count-1 to node 0's data port,
// telling node 0 on its control port once its first three are sent; node 0
// claims the port with a sink only after hearing from every sender, so those
// first messages wait in the port and must reach the sink first. A window
// of 1 KiB (7 small messages: 132 bytes are charged for each) makes the
// senders wait for credit that only the sink's deliveries give.
void stream_into_a_sink(int nodes, std::size_t threads) {
    constexpr int count = 3000;
    csp::net::nameserver ns;
    std::map<int, std::vector<int>> got;
    run_nodes(
        ns, "sink", nodes,
        [&](csp::net::node& self) {
            if (self.rank() == 0) {
                auto control = self.open(control_port);
                for (int k = 1; k < nodes; ++k) (void)control.receive<int>();
                recorder sink(static_cast<std::size_t>((nodes - 1) * count));
                {
                    const auto claim = self.claim(data_port, "test", csp::net::departures::last_sender, sink);
                    sink.wait();
                }  // released: the sink is handed nothing more
                got = sink.by_source;
                for (int k = 1; k < nodes; ++k) self.send(k, control_port, 0);  // they may close now
            } else {
                auto control = self.open(control_port);
                for (int i = 0; i < count; ++i) {
                    self.send(0, data_port, i);
                    if (i == 2) self.send(0, control_port, self.rank());
                }
                (void)control.receive<int>();
            }
        },
        threads, [](int, csp::net::node_options& o) { o.window = 1024; });
    ASSERT_EQ(got.size(), static_cast<std::size_t>(nodes - 1));
    for (int k = 1; k < nodes; ++k) {
        const auto& seq = got[k];
        ASSERT_EQ(seq.size(), static_cast<std::size_t>(count)) << "from node " << k;
        for (int i = 0; i < count; ++i) ASSERT_EQ(seq[static_cast<std::size_t>(i)], i) << "from node " << k;
    }
}

TEST(net_port_sink, messages_that_came_before_the_claim_come_first_then_the_rest_in_order) {
    stream_into_a_sink(2, 1);
}

TEST(net_port_sink, three_senders_into_a_sink_on_two_worker_threads_lose_and_reorder_nothing) {
    stream_into_a_sink(3, 2);
}

TEST(net_port_sink, a_departure_is_delivered_after_the_peers_last_message) {
    constexpr int count = 200;
    csp::net::nameserver ns;
    std::vector<int> order, failures;
    std::vector<int> values;
    run_nodes(ns, "sink_departure", 2, [&](csp::net::node& self) {
        if (self.rank() == 0) {
            recorder sink(count + 1);  // the messages, then the departure
            {
                const auto claim = self.claim(data_port, "test", csp::net::departures::each, sink);
                sink.wait();
            }
            order = sink.order;
            failures = sink.failures;
            values = sink.by_source[1];
        } else {
            for (int i = 0; i < count; ++i) self.send(0, data_port, i);
            self.close();  // leaves cleanly: node 0 hears it on the claimed port
        }
    });
    ASSERT_EQ(order.size(), static_cast<std::size_t>(count + 1));
    for (int i = 0; i < count; ++i) ASSERT_EQ(order[static_cast<std::size_t>(i)], 1);
    EXPECT_EQ(order.back(), -1 - 1);
    EXPECT_EQ(failures, std::vector<int>{1});
    ASSERT_EQ(values.size(), static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) EXPECT_EQ(values[static_cast<std::size_t>(i)], i);
}

TEST(net_port_sink, after_release_messages_wait_in_the_port_for_the_next_owner) {
    constexpr int batch = 100;
    csp::net::nameserver ns;
    std::size_t first_calls_after_release = 0;
    std::vector<int> second;
    std::vector<int> first;
    run_nodes(ns, "sink_release", 2, [&](csp::net::node& self) {
        auto control = self.open(control_port);
        if (self.rank() == 0) {
            recorder a(batch);
            {
                const auto claim = self.claim(data_port, "first owner", csp::net::departures::last_sender, a);
                a.wait();
            }
            const std::size_t calls = a.calls.load();
            self.send(1, control_port, 1);   // send the second batch now
            (void)control.receive<int>();    // it is sent (and, the link being in order, arrived
                                             // before this reply)
            first_calls_after_release = a.calls.load() - calls;
            first = a.by_source[1];
            recorder b(batch);
            {
                const auto claim = self.claim(data_port, "second owner", csp::net::departures::last_sender, b);
                b.wait();
            }
            second = b.by_source[1];
            self.send(1, control_port, 2);
        } else {
            for (int i = 0; i < batch; ++i) self.send(0, data_port, i);
            (void)control.receive<int>();
            for (int i = 0; i < batch; ++i) self.send(0, data_port, batch + i);
            self.send(0, control_port, 0);
            (void)control.receive<int>();
        }
    });
    EXPECT_EQ(first_calls_after_release, 0u);
    ASSERT_EQ(first.size(), static_cast<std::size_t>(batch));
    ASSERT_EQ(second.size(), static_cast<std::size_t>(batch));
    for (int i = 0; i < batch; ++i) {
        EXPECT_EQ(first[static_cast<std::size_t>(i)], i);
        EXPECT_EQ(second[static_cast<std::size_t>(i)], batch + i);
    }
}

// Regression: a message that came after the port's owner let it go (a peer
// still using a communicator this node had closed) was logged at close as
// sent to a port no process opened ("sent to the wrong port?"). The log now
// names the owner that was done with it.
TEST(net_port_sink, messages_that_come_after_the_owner_let_the_port_go_are_named_at_close) {
    csp::net::nameserver ns;
    std::vector<std::string> faults;
    run_nodes(ns, "sink_after_release", 2, [&](csp::net::node& self) {
        auto control = self.open(control_port);
        if (self.rank() == 0) {
            recorder a(1);
            {
                const auto claim = self.claim(data_port, "the sink layer", csp::net::departures::last_sender, a);
                a.wait();
            }
            self.send(1, control_port, 1);
            (void)control.receive<int>();  // the late message is in (the link keeps order)
            self.close();
            faults = self.faults();
        } else {
            self.send(0, data_port, 1);
            (void)control.receive<int>();
            self.send(0, data_port, 2);
            self.send(0, control_port, 0);
            self.close();
        }
    });
    const std::string expected =
        "closing: port 40 of node 0 holds 1 message that no process can receive: the sink layer owned the port and "
        "was done with it before it came (a peer went on using it: one call more than this node made?)";
    EXPECT_NE(std::find(faults.begin(), faults.end(), expected), faults.end()) << ::testing::PrintToString(faults);
}

TEST(net_port_sink, a_claimed_port_refuses_open_and_a_second_claim_naming_its_owner) {
    csp::net::nameserver ns;
    std::string opened, claimed;
    run_nodes(ns, "sink_claimed", 1, [&](csp::net::node& self) {
        recorder sink(1);
        const auto claim = self.claim(data_port, "the sink layer", csp::net::departures::last_sender, sink);
        try {
            (void)self.open(data_port);
        } catch (const csp::usage_error& e) {
            opened = e.what();
        }
        recorder other(1);
        try {
            const auto again = self.claim(data_port, "another layer", csp::net::departures::last_sender, other);
        } catch (const csp::usage_error& e) {
            claimed = e.what();
        }
    });
    EXPECT_NE(opened.find("the sink layer owns it"), std::string::npos) << opened;
    EXPECT_NE(claimed.find("already owned by the sink layer"), std::string::npos) << claimed;
}

}  // namespace
