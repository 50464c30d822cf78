// The link state machine (net/link.hpp) driven as the switch drives it, with
// a transport that moves nothing: every transition of the table, the order of
// queued frames, the error stored once, and the transitions that are bugs.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "csp/alt.hpp"
#include "csp/runtime.hpp"
#include "net/link.hpp"

namespace net = csp::net;
using peer_link = net::detail::link;  // (::link is POSIX link(2))
using net::detail::link_state;
using net::detail::outgoing;

namespace {

constexpr int peer = 4;
constexpr std::uint32_t self = 1;

// Records what the link asks of it and hands the queue to the test.
struct fake_transport final : net::detail::transport {
    int* interrupts;
    csp::reader<outgoing>* queue;
    std::optional<outgoing>* first;
    fake_transport(int* i, csp::reader<outgoing>* q, std::optional<outgoing>* f) : interrupts(i), queue(q), first(f) {}
    const char* name() const noexcept override { return "fake"; }
    int start(net::detail::link_start s) override {
        *queue = std::move(s.queue);
        *first = std::move(s.first);
        return 2;
    }
    void interrupt() noexcept override { ++*interrupts; }
};

outgoing data_frame(std::uint32_t port) {
    outgoing f;
    f.head = net::header::data(self, port, 0, 0);
    return f;
}

// Everything queued now, in order.
std::vector<outgoing> drain_queue(csp::reader<outgoing>& q) {
    std::vector<outgoing> out;
    outgoing f;
    while (csp::select(csp::input(q, f), csp::skip()) == 0) out.push_back(std::move(f));
    return out;
}

// Runs `body(link, group, interrupts, queue, first)` inside a runtime.
template <class F>
void with_link(F body) {
    csp::run([&] {
        auto core = std::make_shared<net::detail::node_core>();
        csp::process_group group;
        peer_link l(peer);
        int interrupts = 0;
        csp::reader<outgoing> queue;
        std::optional<outgoing> first;
        auto bring_up = [&](std::optional<outgoing> f = std::nullopt) {
            l.up(std::make_unique<fake_transport>(&interrupts, &queue, &first), core, group, std::move(f));
        };
        body(l, bring_up, interrupts, queue, first);
    });
}

}  // namespace

TEST(link, a_connected_link_goes_up_drains_and_closes_with_frames_in_send_order) {
    with_link([](peer_link& l, auto bring_up, int& interrupts, csp::reader<outgoing>& queue, auto&) {
        EXPECT_EQ(l.state(), link_state::connecting);
        l.connector_started();
        l.post(data_frame(1));  // before the link is up: waits in its queue
        l.connected();
        EXPECT_EQ(l.state(), link_state::handshaking);
        l.post(data_frame(2));
        l.connector_finished();
        bring_up();
        EXPECT_EQ(l.state(), link_state::up);
        ASSERT_NE(l.carrier(), nullptr);
        l.post(data_frame(3));
        l.drain(self);
        l.drain(self);  // a second drain queues no second goodbye
        EXPECT_EQ(l.state(), link_state::draining);
        EXPECT_EQ(l.error(), nullptr);  // our goodbye alone is no departure
        l.peer_left(self, "node 4 has left");
        ASSERT_NE(l.error(), nullptr);
        EXPECT_STREQ(l.error()->what(), "node 4 has left");
        EXPECT_EQ(l.error()->peer(), peer);

        const auto frames = drain_queue(queue);
        ASSERT_EQ(frames.size(), 4u);
        for (std::uint32_t k = 0; k < 3; ++k) {
            EXPECT_EQ(frames[k].ctl, outgoing::control::none);
            EXPECT_EQ(frames[k].head.port, k + 1);
        }
        EXPECT_EQ(frames[3].ctl, outgoing::control::goodbye);
        EXPECT_EQ(frames[3].head.op, net::opcode::goodbye);

        l.process_exited();
        EXPECT_EQ(l.state(), link_state::draining);
        EXPECT_FALSE(l.settled());
        l.process_exited();
        EXPECT_EQ(l.state(), link_state::closed);
        EXPECT_TRUE(l.settled());
        EXPECT_EQ(l.carrier(), nullptr);
        EXPECT_EQ(interrupts, 0);
    });
}

TEST(link, the_peers_goodbye_on_an_up_link_is_answered_with_ours) {
    with_link([](peer_link& l, auto bring_up, int&, csp::reader<outgoing>& queue, auto&) {
        bring_up();  // accepted from the peer: up straight from connecting
        l.peer_left(self, "node 4 has left");
        EXPECT_EQ(l.state(), link_state::draining);
        EXPECT_TRUE(l.goodbye_sent());
        const auto frames = drain_queue(queue);
        ASSERT_EQ(frames.size(), 1u);
        EXPECT_EQ(frames[0].ctl, outgoing::control::goodbye);
        // A failure reported after the clean end changes nothing.
        EXPECT_FALSE(l.lose("reading from the connection: connection reset"));
        EXPECT_STREQ(l.error()->what(), "node 4 has left");
        EXPECT_EQ(l.state(), link_state::draining);
    });
}

TEST(link, an_accepted_link_sends_its_first_frame_before_the_queue) {
    with_link([](peer_link&, auto bring_up, int&, auto&, std::optional<outgoing>& first) {
        outgoing welcome;
        welcome.head = net::header::welcome(self, 0);
        bring_up(std::move(welcome));
        ASSERT_TRUE(first.has_value());
        EXPECT_EQ(first->head.op, net::opcode::welcome);
    });
}

TEST(link, a_lost_crossing_waits_until_its_deadline_and_up_clears_it) {
    with_link([](peer_link& l, auto bring_up, int&, auto&, auto&) {
        EXPECT_EQ(l.deadline(), csp::clock::time_point::max());
        const auto until = csp::clock::now() + std::chrono::seconds(5);
        l.connector_started();
        l.connected();
        l.await_crossing(until);
        l.connector_finished();
        EXPECT_EQ(l.state(), link_state::handshaking);
        EXPECT_EQ(l.deadline(), until);
        bring_up();
        EXPECT_EQ(l.deadline(), csp::clock::time_point::max());
    });
}

TEST(link, the_error_is_stored_once_and_the_transport_stopped_once) {
    with_link([](peer_link& l, auto bring_up, int& interrupts, csp::reader<outgoing>& queue, auto&) {
        bring_up();
        l.post(data_frame(7));
        ASSERT_TRUE(l.lose("lost node 4: connection reset"));
        EXPECT_EQ(l.state(), link_state::lost);
        const auto error = l.error();
        EXPECT_FALSE(l.lose("lost node 4: a second reason"));
        EXPECT_EQ(l.error(), error);  // the same object every waiter is handed
        EXPECT_STREQ(l.error()->what(), "lost node 4: connection reset");
        EXPECT_EQ(interrupts, 1);
        const auto frames = drain_queue(queue);
        ASSERT_EQ(frames.size(), 2u);
        EXPECT_EQ(frames[1].ctl, outgoing::control::abort);
        EXPECT_THROW(l.post(data_frame(8)), std::logic_error);
        l.process_exited();
        l.process_exited();
        EXPECT_EQ(l.state(), link_state::lost);
        EXPECT_TRUE(l.settled());
    });
}

TEST(link, a_link_lost_while_connecting_settles_only_when_its_connector_reported) {
    with_link([](peer_link& l, auto, int& interrupts, auto&, auto&) {
        l.connector_started();
        ASSERT_TRUE(l.lose("lost node 4: its connection to this node never arrived"));
        EXPECT_EQ(interrupts, 0);  // no transport to stop
        EXPECT_FALSE(l.settled());
        l.connector_finished();
        EXPECT_TRUE(l.settled());
    });
}

TEST(link, transitions_outside_the_table_throw_naming_peer_event_and_state) {
    with_link([](peer_link& l, auto bring_up, int&, auto&, auto&) {
        EXPECT_THROW(l.drain(self), std::logic_error);
        EXPECT_THROW(l.peer_left(self, "x"), std::logic_error);
        EXPECT_THROW(l.process_exited(), std::logic_error);
        bring_up();
        try {
            bring_up();
            ADD_FAILURE() << "a second up was accepted";
        } catch (const std::logic_error& e) {
            EXPECT_EQ(std::string(e.what()), "link to node 4: up while up");
        }
        EXPECT_THROW(l.connected(), std::logic_error);
        EXPECT_THROW(l.connector_started(), std::logic_error);
        l.drain(self);
        EXPECT_THROW(l.post(data_frame(1)), std::logic_error);  // nothing after the goodbye
        l.process_exited();
        // The transport ended without the peer's goodbye and the link was not lost.
        EXPECT_THROW(l.process_exited(), std::logic_error);
    });
}

// An accepted connection the peer gave up on before its first frame
// (link_down::abandoned): the link goes back to connecting with its queue
// whole, and no transport comes up until the abandoned one has exited.
TEST(link, an_abandoned_link_keeps_its_queue_and_takes_a_transport_only_after_the_last_exit) {
    with_link([](peer_link& l, auto bring_up, int& interrupts, csp::reader<outgoing>& queue, auto&) {
        outgoing notice = data_frame(3);
        notice.notice = true;
        l.post(data_frame(1));
        l.post(std::move(notice));
        outgoing welcome;
        welcome.head = net::header::welcome(self, 0);
        bring_up(std::move(welcome));
        EXPECT_EQ(l.notices_queued(), 0u);  // up: the transport may have read them
        l.post(data_frame(2));
        l.abandon();
        EXPECT_EQ(l.state(), link_state::connecting);
        EXPECT_TRUE(l.retiring());
        EXPECT_TRUE(l.idle());  // nothing of ours under way
        EXPECT_EQ(l.queued(), 3u);
        EXPECT_EQ(l.notices_queued(), 1u);  // none was read: the notice is still the peer's to get
        EXPECT_EQ(interrupts, 0);           // its processes are ending by themselves
        EXPECT_THROW(bring_up(), std::logic_error);
        l.process_exited();
        EXPECT_TRUE(l.retiring());
        l.process_exited();
        EXPECT_FALSE(l.retiring());
        EXPECT_EQ(l.carrier(), nullptr);
        EXPECT_EQ(l.queued(), 3u);  // kept for the next transport
        EXPECT_FALSE(l.settled());
        bring_up();
        const auto frames = drain_queue(queue);
        ASSERT_EQ(frames.size(), 3u);
        EXPECT_EQ(frames[0].head.port, 1u);
        EXPECT_EQ(frames[1].head.port, 3u);
        EXPECT_EQ(frames[2].head.port, 2u);
    });
}

TEST(link, a_link_lost_while_its_abandoned_transport_exits_drops_its_queue_and_settles_after) {
    with_link([](peer_link& l, auto bring_up, int&, auto&, auto&) {
        bring_up();
        l.post(data_frame(1));
        l.abandon();
        ASSERT_TRUE(l.lose("lost node 4: its registration with the nameserver ended"));
        EXPECT_EQ(l.state(), link_state::lost);
        EXPECT_FALSE(l.retiring());
        EXPECT_EQ(l.queued(), 0u);
        EXPECT_FALSE(l.settled());
        l.process_exited();
        l.process_exited();
        EXPECT_TRUE(l.settled());
    });
}

TEST(link, only_a_carrying_link_without_an_error_can_be_abandoned) {
    with_link([](peer_link& l, auto bring_up, int&, auto&, auto&) {
        EXPECT_THROW(l.abandon(), std::logic_error);  // connecting: no connection to abandon
        bring_up();
        l.peer_left(self, "node 4 has left");
        EXPECT_THROW(l.abandon(), std::logic_error);  // it spoke: the connection was used
    });
}
