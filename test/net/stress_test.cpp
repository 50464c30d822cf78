// Every message counted: a million between two nodes, all-to-all among eight,
// and two nodes that connect to each other at the same moment.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <deque>
#include <vector>

#include "csp/timer.hpp"
#include "net_fixture.hpp"

using net_test::run_nodes;

namespace {

TEST(net_stress, a_million_messages_between_two_nodes_arrive_in_order) {
    csp::net::nameserver ns;
    constexpr std::uint64_t count = 1'000'000;
    std::uint64_t received = 0;
    run_nodes(ns, "million", 2, [&](csp::net::node& self) {
        auto inbox = self.open(1);
        if (self.rank() == 0) {
            for (std::uint64_t i = 0; i < count; ++i) self.send(1, 1, i);
            EXPECT_EQ(inbox.receive<std::uint64_t>(), count);  // node 1's tally
        } else {
            for (std::uint64_t i = 0; i < count; ++i) {
                const auto v = inbox.receive<std::uint64_t>();
                if (v != i) {
                    ADD_FAILURE() << "message " << i << " arrived as " << v;
                    break;
                }
                ++received;
            }
            self.send(0, 1, received);
        }
    });
    EXPECT_EQ(received, count);
}

class net_stress_threads : public ::testing::TestWithParam<std::size_t> {};

TEST_P(net_stress_threads, eight_nodes_all_to_all_deliver_every_message_exactly_once) {
    csp::net::nameserver ns;
    constexpr int n = 8, per_peer = 2000;
    std::vector<std::vector<int>> counts(n, std::vector<int>(n, 0));  // [receiver][sender]
    run_nodes(ns, "all2all", n, [&](csp::net::node& self) {
        auto inbox = self.open(1);
        const int me = self.rank();
        csp::par(
            [&] {
                for (int i = 0; i < per_peer; ++i)
                    for (int k = 1; k < n; ++k) self.send((me + k) % n, 1, std::pair<int, int>{me, i});
            },
            [&] {
                std::vector<int> next(n, 0);
                for (int m = 0; m < per_peer * (n - 1); ++m) {
                    const auto [from, seq] = inbox.receive<std::pair<int, int>>();
                    ASSERT_EQ(seq, next[static_cast<std::size_t>(from)]++) << "from node " << from;
                    ++counts[static_cast<std::size_t>(me)][static_cast<std::size_t>(from)];
                }
            });
        // Nothing more than expected: what is left can only be the notice
        // that every peer left (a port hears it once no sender remains).
        while (inbox.pending() > 0) {
            try {
                inbox.receive();
                ADD_FAILURE() << "node " << me << " got a message beyond the expected ones";
            } catch (const csp::net::peer_error&) {
            }
        }
    }, GetParam());
    for (int r = 0; r < n; ++r)
        for (int s = 0; s < n; ++s) EXPECT_EQ(counts[r][s], r == s ? 0 : per_peer) << r << " from " << s;
}

// Messages of 20 KiB, which a TCP link hands out as slices of its read
// buffer (net/frame_reader.hpp): four receivers of one port, on every
// worker, each keeps its last few messages for a while and checks their
// bytes only when it lets them go. A buffer reused while a slice of it is
// held, or released on one worker and rewritten without ordering on the
// reader's, shows up as a wrong element; every message is counted.
TEST_P(net_stress_threads, large_messages_kept_by_receivers_on_every_worker_keep_their_bytes) {
    csp::net::nameserver ns;
    constexpr std::uint32_t count = 6000, elements = 5120, receivers = 4;
    std::atomic<std::uint32_t> checked{0}, wrong{0};
    // How often each message's number was seen: a slice overwritten by a
    // later message at the same offset reads as a well-formed message, once
    // too often, and its own number goes missing.
    std::vector<std::atomic<std::uint32_t>> seen(count);
    run_nodes(ns, "slices", 2, [&](csp::net::node& self) {
        auto inbox = self.open(1);
        if (self.rank() == 0) {
            for (std::uint32_t i = 0; i < count; ++i) {
                std::vector<std::uint32_t> v(elements);
                for (std::uint32_t j = 0; j < elements; ++j) v[j] = i * 7 + j;
                self.send(1, 1, std::move(v));
            }
            EXPECT_EQ(inbox.receive<std::uint32_t>(), count);  // node 1's tally
            return;
        }
        auto receiver = [&](std::uint32_t who) {
            std::deque<csp::net::message> kept;
            auto let_go = [&] {
                const auto got = kept.front().view<std::uint32_t>();
                const std::uint32_t i = got.empty() ? 0 : got[0] / 7;
                bool ok = got.size() == elements;
                for (std::uint32_t j = 0; ok && j < elements; ++j) ok = got[j] == i * 7 + j;
                if (!ok) wrong.fetch_add(1);
                else if (i < count) seen[i].fetch_add(1);
                checked.fetch_add(1);
                kept.pop_front();
            };
            for (std::uint32_t m = who; m < count; m += receivers) {
                kept.push_back(inbox.receive());
                if (kept.size() > 1 + (m / receivers) % 6) let_go();
                if (m % 11 == 0) csp::yield();
            }
            while (!kept.empty()) let_go();
        };
        csp::par(
            [&] { receiver(0); }, [&] { receiver(1); }, [&] { receiver(2); }, [&] { receiver(3); });
        self.send(0, 1, checked.load());
    }, GetParam());
    EXPECT_EQ(checked.load(), count);
    EXPECT_EQ(wrong.load(), 0u);
    EXPECT_EQ(std::count_if(seen.begin(), seen.end(), [](const auto& k) { return k.load() != 1; }), 0);
}

INSTANTIATE_TEST_SUITE_P(runtime, net_stress_threads, ::testing::Values(1, 2, 4),
                         [](const auto& info) { return std::to_string(info.param) + "_threads"; });

// Two nodes (each a runtime of its own) meet here without blocking their
// threads: a node's processes must go on running, or its UCX worker is not
// progressed and frames it sent may not leave (README, Transports).
class meeting {
public:
    void arrive_and_wait() {
        const int phase = arrived_.fetch_add(1) / 2 + 1;
        while (arrived_.load() < 2 * phase) csp::sleep_for(std::chrono::microseconds(100));
    }

private:
    std::atomic<int> arrived_{0};
};

TEST(net_stress, simultaneous_connects_end_with_one_connection_and_no_loss) {
    for (int round = 0; round < 20; ++round) {
        csp::net::nameserver ns;
        meeting both;
        std::atomic<std::size_t> links{0}, made{0}, accepted{0};
        run_nodes(ns, "crossing", 2, [&](csp::net::node& self) {
            auto inbox = self.open(1);
            both.arrive_and_wait();  // both registered: now send at once
            for (int i = 0; i < 100; ++i) self.send(1 - self.rank(), 1, i);
            for (int i = 0; i < 100; ++i) ASSERT_EQ(inbox.receive<int>(), i);
            const auto st = self.stats();
            links += st.links;
            made += st.connected;
            accepted += st.accepted;
            both.arrive_and_wait();  // neither closes before both have looked
        });
        EXPECT_EQ(links.load(), 2u) << "round " << round;  // one connection, seen from both ends
        EXPECT_EQ(made.load(), 1u) << "round " << round;
        EXPECT_EQ(accepted.load(), 1u) << "round " << round;
    }
}

}  // namespace
