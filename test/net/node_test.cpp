#include <malloc.h>

#include <array>
#include <atomic>
#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "csp/alt.hpp"
#include "net_fixture.hpp"

using namespace std::chrono_literals;
using net_test::run_nodes;

namespace {

struct reading {
    std::string sensor;
    std::vector<double> values;
    template <class A>
    void serialize(A& a) { a(sensor, values); }
};

TEST(net_node, ping_pong_between_two_nodes) {
    csp::net::nameserver ns;
    std::vector<int> seen;
    run_nodes(ns, "pingpong", 2, [&](csp::net::node& self) {
        auto inbox = self.open(7);
        const int other = 1 - self.rank();
        if (self.rank() == 0) {
            for (int i = 0; i < 100; ++i) {
                self.send(other, 7, i);
                seen.push_back(inbox.receive<int>());
            }
        } else {
            for (int i = 0; i < 100; ++i) self.send(other, 7, inbox.receive<int>() * 2);
        }
    });
    ASSERT_EQ(seen.size(), 100u);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(seen[static_cast<std::size_t>(i)], 2 * i);
}

// Regression: a timeout set to the largest duration (no limit, as a user
// writes it) overflowed when added to the clock, into a deadline in the
// past: registration, connection and handshake timed out at once.
TEST(net_node, timeouts_of_the_largest_duration_set_no_limit) {
    csp::net::nameserver ns;
    std::vector<int> seen;
    run_nodes(
        ns, "no-limits", 2,
        [&](csp::net::node& self) {
            auto inbox = self.open(7);
            if (self.rank() == 0) {
                self.send(1, 7, 20);
                seen.push_back(inbox.receive<int>());
            } else {
                self.send(0, 7, inbox.receive<int>() + 1);
            }
        },
        1, [](int, csp::net::node_options& o) {
            o.connect_timeout = std::chrono::milliseconds::max();
            o.handshake_timeout = std::chrono::milliseconds::max();
            o.liveness_timeout = std::chrono::milliseconds::max();
            o.linger = std::chrono::milliseconds::max();
        });
    EXPECT_EQ(seen, std::vector<int>{21});
}

// Regression: a receive on a port of a closed node waited for ever (the
// runtime's deadlock report was all that ended it), and a port could still
// be opened there. Now what came is received, then each receive and guard
// says the node closed; opening or claiming a port there is a usage_error.
TEST(net_node, a_port_of_a_closed_node_gives_what_came_then_says_the_node_closed) {
    std::vector<int> got;
    std::vector<std::string> errors;
    csp::run([&] {
        csp::net::node self{csp::net::node_options{}};
        auto inbox = self.open(5);
        auto waiting = self.open(6);
        self.send(0, 5, 1);
        self.send(0, 5, 2);
        csp::par(
            [&] {
                try {
                    waiting.receive<int>();  // nothing comes: the close ends it
                } catch (const csp::retired_error& e) {
                    errors.push_back(std::string("blocked: ") + e.what());
                }
            },
            [&] {
                csp::yield();
                self.close();
            });
        got.push_back(inbox.receive<int>());
        got.push_back(inbox.receive<int>());
        try {
            inbox.receive<int>();
        } catch (const csp::retired_error& e) {
            errors.push_back(std::string("receive: ") + e.what());
        }
        int v = 0;
        try {
            csp::select(csp::net::input(inbox, v), csp::timeout(10s));
        } catch (const csp::retired_error& e) {
            errors.push_back(std::string("select: ") + e.what());
        }
        try {
            self.open(9);
        } catch (const csp::usage_error& e) {
            errors.push_back(std::string("open: ") + e.what());
        }
    });
    EXPECT_EQ(got, (std::vector<int>{1, 2}));
    ASSERT_EQ(errors.size(), 4u);
    EXPECT_EQ(errors[0], "blocked: port 6 of node 0: the node is closed, and every message that came was received");
    EXPECT_EQ(errors[1], "receive: port 5 of node 0: the node is closed, and every message that came was received");
    EXPECT_EQ(errors[2], "select: port 5 of node 0: the node is closed, and every message that came was received");
    EXPECT_EQ(errors[3], "open: open of port 9 on a closed node (default/0)");
}

// Regression: a receive waiting while its own node closed heard "node 1
// of job 'x' has left (it closed its node)" from the link's end, though
// node 1 had closed nothing: its goodbye only answered this node's. The
// link's end names this node's close now (or, should the port be retired
// first, the port says the node closed).
TEST(net_node, a_link_ended_by_this_nodes_close_does_not_say_the_peer_left) {
    csp::net::nameserver ns;
    std::string blocked;
    std::atomic<bool> done{false};
    run_nodes(ns, "own-close", 2, [&](csp::net::node& self) {
        auto inbox = self.open(1);
        if (self.rank() == 1) {
            EXPECT_EQ(inbox.receive<int>(), 7);
            while (!done.load()) csp::sleep_for(5ms);  // stays open throughout
            return;
        }
        self.send(1, 1, 7);  // the link is up
        csp::par(
            [&] {
                try {
                    inbox.receive<int>();
                } catch (const csp::net::peer_error& e) {
                    EXPECT_EQ(e.peer(), 1);
                    blocked = e.what();
                } catch (const csp::retired_error& e) {
                    blocked = e.what();
                }
            },
            [&] {
                csp::sleep_for(10ms);
                self.close();
            });
        done = true;
    });
    EXPECT_EQ(blocked.find("has left"), std::string::npos) << blocked;
    EXPECT_TRUE(blocked.rfind("the link to node 1 of job 'own-close' ended: this node closed", 0) == 0 ||
                blocked == "port 1 of node 0: the node is closed, and every message that came was received")
        << blocked;
}

TEST(net_node, values_of_every_encoding_arrive_intact) {
    csp::net::nameserver ns;
    run_nodes(ns, "values", 2, [&](csp::net::node& self) {
        auto inbox = self.open(1);
        if (self.rank() == 0) {
            self.send(1, 1, 3.25);
            self.send(1, 1, std::string("hello"));
            std::vector<double> big(100'000);
            for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<double>(i) * 0.5;
            self.send(1, 1, std::move(big));
            self.send(1, 1, reading{"t1", {1.5, -2.0}}, 99);
            self.send(1, 1, std::vector<int>{});
        } else {
            EXPECT_EQ(inbox.receive<double>(), 3.25);
            EXPECT_EQ(inbox.receive<std::string>(), "hello");
            csp::net::message m = inbox.receive();
            EXPECT_EQ(m.source, 0);
            auto v = m.view<double>();  // in place, no copy
            ASSERT_EQ(v.size(), 100'000u);
            EXPECT_EQ(v[99'999], 99'999 * 0.5);
            csp::net::message r = inbox.receive();
            EXPECT_EQ(r.tag, 99u);
            const auto rd = r.as<reading>();
            EXPECT_EQ(rd.sensor, "t1");
            EXPECT_EQ(rd.values, (std::vector<double>{1.5, -2.0}));
            EXPECT_TRUE(inbox.receive<std::vector<int>>().empty());
        }
    });
}

// Regression: a std::span is trivially copyable, so its pointer and length
// were sent, and the receiver read 4.65825e-310 1.97626e-323.
TEST(net_node, a_span_or_string_view_is_sent_as_the_data_it_views) {
    csp::net::nameserver ns;
    run_nodes(ns, "views", 2, [&](csp::net::node& self) {
        auto inbox = self.open(1);
        if (self.rank() == 0) {
            std::vector<double> row{1.5, -2.25, 3.0, 4.0};
            self.send(1, 1, std::span<const double>(row).subspan(1, 2));
            std::fill(row.begin(), row.end(), 0.0);  // the send copied what it needed
            std::string text = "a heat row";
            self.send(1, 1, std::string_view(text).substr(2, 4));
            text.assign(text.size(), 'x');
            std::vector<std::string> names{"a", "bc", "def"};
            self.send(1, 1, std::span<std::string>(names).last(2));  // cereal-encoded elements
        } else {
            EXPECT_EQ(inbox.receive<std::vector<double>>(), (std::vector<double>{-2.25, 3.0}));
            EXPECT_EQ(inbox.receive<std::string>(), "heat");
            EXPECT_EQ(inbox.receive<std::vector<std::string>>(), (std::vector<std::string>{"bc", "def"}));
        }
    });
}

}  // namespace

namespace {
struct sample {
    int rank;
    double position[3];
    struct {
        float weight;
        std::int16_t flags[2];
    } extra;
};
// A pointer its sender hands out and looks up again when it comes back.
struct ticket {
    const void* request;
    int attempt;
};
}  // namespace
template <> struct csp::sent_as_bytes<ticket> : std::true_type {};

namespace {

// A struct of plain fields (nested, with arrays) travels as its bytes, as
// does one holding a pointer declared csp::sent_as_bytes; one holding an
// undeclared pointer or view does not compile (must_not_compile/).
TEST(net_node, a_struct_of_plain_fields_or_declared_bytes_travels_as_its_bytes) {
    csp::net::nameserver ns;
    static const int anchor = 0;
    run_nodes(ns, "structs", 2, [&](csp::net::node& self) {
        auto inbox = self.open(1);
        if (self.rank() == 0) {
            self.send(1, 1, sample{7, {1.0, -2.0, 3.5}, {0.25f, {-3, 4}}});
            self.send(1, 1, std::vector<sample>{sample{1, {}, {}}, sample{2, {9, 9, 9}, {1.0f, {5, 6}}}});
            self.send(1, 1, ticket{&anchor, 1});
            const auto back = inbox.receive<ticket>();
            EXPECT_EQ(back.request, &anchor);  // the same address came back
            EXPECT_EQ(back.attempt, 2);
        } else {
            const auto s = inbox.receive<sample>();
            EXPECT_EQ(s.rank, 7);
            EXPECT_EQ(s.position[2], 3.5);
            EXPECT_EQ(s.extra.weight, 0.25f);
            EXPECT_EQ(s.extra.flags[1], 4);
            const auto v = inbox.receive<std::vector<sample>>();
            ASSERT_EQ(v.size(), 2u);
            EXPECT_EQ(v[1].position[0], 9.0);
            EXPECT_EQ(v[1].extra.flags[0], 5);
            auto t = inbox.receive<ticket>();
            ++t.attempt;
            self.send(0, 1, t);  // rank 0's address, handed back as it came
        }
    });
}

TEST(net_node, a_payload_of_the_wrong_size_is_a_decode_error_and_the_port_goes_on) {
    csp::net::nameserver ns;
    run_nodes(ns, "decode", 2, [&](csp::net::node& self) {
        auto inbox = self.open(1);
        if (self.rank() == 0) {
            self.send(1, 1, csp::net::encode(std::int32_t{5}));  // untyped bytes: only the size is checked
            self.send(1, 1, std::int32_t{6});
        } else {
            try {
                (void)inbox.receive<double>();
                ADD_FAILURE() << "a 4-byte payload decoded as a double";
            } catch (const csp::net::decode_error& e) {
                EXPECT_NE(std::string(e.what()).find("4 bytes"), std::string::npos) << e.what();
            }
            EXPECT_EQ(inbox.receive<std::int32_t>(), 6);
        }
    });
}

// Regression: four floats were received as two doubles without complaint.
TEST(net_node, a_message_received_as_another_type_is_a_decode_error_naming_both_types) {
    csp::net::nameserver ns;
    run_nodes(ns, "types", 2, [&](csp::net::node& self) {
        auto inbox = self.open(1);
        if (self.rank() == 0) {
            self.send(1, 1, std::array<float, 4>{1, 2, 3, 4});
            self.send(1, 1, std::vector<float>{1, 2});
            self.send(1, 1, std::array<float, 4>{5, 6, 7, 8});
        } else {
            try {
                (void)inbox.receive<std::array<double, 2>>();
                ADD_FAILURE() << "four floats were received as two doubles";
            } catch (const csp::net::decode_error& e) {
                const std::string what = e.what();
                EXPECT_NE(what.find("sent as std::array<float, 4>"), std::string::npos) << what;
                EXPECT_NE(what.find("received as std::array<double, 2>"), std::string::npos) << what;
                EXPECT_NE(what.find("from node 0"), std::string::npos) << what;
            }
            try {
                (void)inbox.receive<std::vector<double>>();
                ADD_FAILURE() << "a vector of floats was received as a vector of doubles";
            } catch (const csp::net::decode_error& e) {
                const std::string what = e.what();
                EXPECT_NE(what.find("std::vector<float>"), std::string::npos) << what;
                EXPECT_EQ(what.find("St6vector"), std::string::npos) << what;
            }
            // The port goes on, and raw access stays possible on purpose.
            const auto m = inbox.receive();
            ASSERT_EQ(m.view<float>().size(), 4u);
            EXPECT_EQ(m.view<float>()[3], 8.0f);
            EXPECT_EQ(m.view<double>().size(), 2u);
        }
    });
}

TEST(net_node, messages_between_two_nodes_arrive_in_order_on_every_port) {
    csp::net::nameserver ns;
    constexpr int per_port = 5000;
    run_nodes(ns, "order", 2, [&](csp::net::node& self) {
        if (self.rank() == 0) {
            for (int i = 0; i < per_port; ++i)
                for (csp::net::port_id p = 1; p <= 3; ++p) self.send(1, p, i);
        } else {
            csp::par_for(3, [&](std::size_t k) {
                auto port = self.open(static_cast<csp::net::port_id>(k + 1));
                for (int i = 0; i < per_port; ++i) ASSERT_EQ(port.receive<int>(), i);
            });
        }
    });
}

// A relaying node sends a message on as it arrived: the next node receives
// it with the relay's rank and tag and the type it was first sent as.
TEST(net_node, a_forwarded_message_keeps_its_value_and_type) {
    csp::net::nameserver ns;
    run_nodes(ns, "forward", 3, [&](csp::net::node& self) {
        auto inbox = self.open(4);
        if (self.rank() == 0) {
            self.send(1, 4, std::vector<double>{0.5, 1.5, 2.5}, 11);
            self.send(1, 4, reading{"probe", {3.0}}, 12);
        } else if (self.rank() == 1) {
            for (int i = 0; i < 2; ++i) {
                const csp::net::message m = inbox.receive();
                self.forward(2, 4, m, m.tag + 100);
                if (i == 1) self.forward(1, 4, m, 7);  // to itself
            }
            const auto back = inbox.receive();
            EXPECT_EQ(back.source, 1);
            EXPECT_EQ(back.tag, 7u);
            EXPECT_EQ(back.as<reading>().sensor, "probe");
            csp::net::message report;
            report.failure = std::make_shared<const csp::net::peer_error>(0, "node 0 was lost");
            try {
                self.forward(2, 4, report, 0);
                ADD_FAILURE() << "a failure report was forwarded";
            } catch (const csp::usage_error& e) {
                EXPECT_NE(std::string(e.what()).find("node 0 was lost"), std::string::npos) << e.what();
            }
        } else {
            const auto first = inbox.receive();
            EXPECT_EQ(first.source, 1);
            EXPECT_EQ(first.tag, 111u);
            EXPECT_EQ(first.as<std::vector<double>>(), (std::vector<double>{0.5, 1.5, 2.5}));
            EXPECT_THROW((void)first.as<std::vector<float>>(), csp::net::decode_error);
            const auto second = inbox.receive();
            EXPECT_EQ(second.tag, 112u);
            const auto r = second.as<reading>();
            EXPECT_EQ(r.sensor, "probe");
            EXPECT_EQ(r.values, std::vector<double>{3.0});
        }
    });
}

TEST(net_node, a_node_can_send_to_itself) {
    csp::net::nameserver ns;
    run_nodes(ns, "self", 1, [&](csp::net::node& self) {
        self.send(0, 4, 11, 7);
        auto m = self.open(4).receive();
        EXPECT_EQ(m.source, 0);
        EXPECT_EQ(m.tag, 7u);
        EXPECT_EQ(m.as<int>(), 11);
    });
}

// Regression: a node started without csp-launch or a nameserver aborted
// ("needs rank, size and a peers table") instead of running alone.
TEST(net_node, a_node_started_without_a_launcher_is_a_job_of_one) {
    csp::run([] {
        csp::net::node self{csp::net::node_options{}};
        EXPECT_EQ(self.rank(), 0);
        EXPECT_EQ(self.size(), 1);
        csp::net::port in = self.open(3);
        self.send(0, 3, std::vector<double>{1.5, 2.5}, 9);
        auto m = in.receive();
        EXPECT_EQ(m.source, 0);
        EXPECT_EQ(m.tag, 9u);
        EXPECT_EQ(m.as<std::vector<double>>(), (std::vector<double>{1.5, 2.5}));
        EXPECT_THROW(self.send(1, 3, 0), csp::usage_error);  // there is no rank 1
        self.close();
    });
}

// The senders stay until node 0 has both values. When they left at once, a
// select that had taken port 1's value could find port 1 failed (no node
// left that could send to it) and, being a priority select, throw that
// before taking port 2's value: the test raced with the departures.
TEST(net_node, receive_from_a_set_of_ports) {
    csp::net::nameserver ns;
    run_nodes(ns, "set", 3, [&](csp::net::node& self) {
        if (self.rank() != 0) {
            auto done = self.open(3);
            self.send(0, static_cast<csp::net::port_id>(self.rank()), self.rank() * 10);
            (void)done.receive<int>();
            return;
        }
        auto a = self.open(1), b = self.open(2);
        int x = 0, y = 0, total = 0;
        std::vector<std::size_t> chosen;
        for (int i = 0; i < 2; ++i) {
            chosen.push_back(csp::select(csp::net::input(a, x), csp::net::input(b, y)));
            total += chosen.back() == 0 ? x : y;
        }
        self.send(1, 3, 0);
        self.send(2, 3, 0);
        std::sort(chosen.begin(), chosen.end());
        EXPECT_EQ(chosen, (std::vector<std::size_t>{0, 1}));
        EXPECT_EQ(total, 30);
    });
}

TEST(net_node, a_port_alternates_with_a_channel_and_a_timeout) {
    csp::net::nameserver ns;
    run_nodes(ns, "alt", 2, [&](csp::net::node& self) {
        auto inbox = self.open(1);
        if (self.rank() == 1) {
            (void)inbox.receive<int>();  // node 0 is ready
            self.send(0, 1, 42);
            return;
        }
        csp::channel<int> local;
        int from_port = 0, from_channel = 0;
        csp::par(
            [&] {
                // Nothing has been sent yet: the timeout wins.
                EXPECT_EQ(csp::select(csp::net::input(inbox, from_port), csp::timeout(20ms)), 1u);
                local.writer().write(5);
            },
            [&] {
                EXPECT_EQ(csp::select(csp::input(local.reader(), from_channel), csp::timeout(5s)), 0u);
                self.send(1, 1, 0);
                EXPECT_EQ(csp::select(csp::net::input(inbox, from_port), csp::input(local.reader(), from_channel),
                                      csp::timeout(5s)),
                          0u);
            });
        EXPECT_EQ(from_channel, 5);
        EXPECT_EQ(from_port, 42);
    });
}

TEST(net_node, sends_to_a_node_that_left_report_it) {
    csp::net::nameserver ns;
    run_nodes(ns, "left", 2, [&](csp::net::node& self) {
        auto inbox = self.open(1);
        if (self.rank() == 1) {
            self.send(0, 1, 1);
            self.close();
            return;
        }
        EXPECT_EQ(inbox.receive<int>(), 1);
        // The goodbye follows the message; wait until the switch has seen it.
        for (int i = 0; i < 500; ++i) {
            try {
                self.send(1, 1, 2);
            } catch (const csp::net::peer_error& e) {
                EXPECT_EQ(e.peer(), 1);
                EXPECT_NE(std::string(e.what()).find("has left"), std::string::npos) << e.what();
                // Leaving is no fault. A send of this loop that was queued
                // before the goodbye arrived is reported as not sent, which is
                // the only fault allowed here.
                for (const std::string& f : self.faults())
                    EXPECT_NE(f.find("was not sent: node 1 of job 'left' has left"), std::string::npos) << f;
                return;
            }
            csp::select(csp::timeout(2ms));
        }
        ADD_FAILURE() << "sends to a departed node kept succeeding";
    });
}

// Regression: every large message paid a page fault per 4 KiB of each
// buffer it passed through (the encoded payload, the received block, the
// decoded vector): glibc mapped each block over 128 KiB (at most 32 MiB once
// its threshold adapted) afresh and gave freed memory at the top of the heap
// back at once, and a 1 MiB broadcast between two nodes took 1.5-5 ms
// instead of 0.3. A node now keeps blocks up to 64 MiB on the heap and the
// heap's freed memory for reuse (node_options::keep_freed_memory): a 48 MiB
// block made after the node comes from the heap, not a mapping of its own,
// and freeing it leaves the heap as large as it was.
TEST(net_node, large_message_buffers_come_from_the_heap_and_stay_for_reuse) {
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "AddressSanitizer has its own allocator: glibc's settings do not apply";
#endif
    csp::net::nameserver ns;
    csp::run([&] {
        csp::net::node self(net_test::options_for(ns, "keep-memory", 0, 1));
        constexpr std::size_t big = std::size_t{48} << 20;
        const auto before = ::mallinfo2();
        auto* block = static_cast<volatile char*>(std::malloc(big));
        ASSERT_NE(block, nullptr);
        block[0] = 1;
        block[big - 1] = 1;
        const auto held = ::mallinfo2();
        EXPECT_EQ(held.hblks, before.hblks) << "a block of its own mapping";
        EXPECT_GE(held.arena, before.arena + big - before.fordblks) << "not from the heap";
        std::free(const_cast<char*>(block));
        const auto after = ::mallinfo2();
        EXPECT_EQ(after.arena, held.arena) << "freed memory given back";
        self.close();
    });
}

TEST(net_node, bad_arguments_name_what_is_wrong) {
    csp::net::nameserver ns;
    run_nodes(ns, "args", 2, [&](csp::net::node& self) {
        try {
            self.send(5, 1, 0);
            ADD_FAILURE();
        } catch (const csp::usage_error& e) {
            EXPECT_NE(std::string(e.what()).find("rank 5"), std::string::npos) << e.what();
        }
    });
    EXPECT_THROW(csp::run([] {
                     csp::net::node_options o;  // a rank, but no nameserver and no peers table
                     o.rank = 1;
                     o.size = 2;
                     csp::net::node n(o);
                 }),
                 csp::usage_error);
    EXPECT_THROW(csp::net::node n{csp::net::node_options{}}, csp::usage_error);  // outside a process
}

}  // namespace

namespace {

// Waits (at most 5 s) until sends to `peer` are refused: the switch has
// handled its departure.
bool wait_until_departed(csp::net::node& self, int peer) {
    for (int i = 0; i < 2500; ++i) {
        try {
            self.send(peer, 99, 0);
        } catch (const csp::net::peer_error&) {
            return true;
        }
        csp::select(csp::timeout(2ms));
    }
    return false;
}

}  // namespace

// Regression: a clean departure told no port, so a receive waiting on the
// peer that left blocked for ever.
TEST(net_departures, a_receive_waiting_on_the_only_sender_that_left_fails_naming_it) {
    csp::net::nameserver ns;
    run_nodes(ns, "leave-1", 2, [](csp::net::node& self) {
        auto inbox = self.open(5);
        if (self.rank() == 1) {
            self.send(0, 5, 41);
            self.close();
            return;
        }
        EXPECT_EQ(inbox.receive<int>(), 41);  // what it sent before leaving comes first
        const auto start = csp::clock::now();
        try {
            inbox.receive<int>();
            ADD_FAILURE() << "a receive from a node that left returned";
        } catch (const csp::net::peer_error& e) {
            EXPECT_EQ(e.peer(), 1);
            EXPECT_NE(std::string(e.what()).find("node 1 of job 'leave-1' has left"), std::string::npos) << e.what();
            // it says why a receive from any node ends with this one
            EXPECT_NE(std::string(e.what()).find("no node of the job is left that could send to port 5 of node 0"),
                      std::string::npos)
                << e.what();
        }
        EXPECT_LT(csp::clock::now() - start, 5s);
    });
}

// A peer leaving is no error while another could still send; the last one's
// departure is.
TEST(net_departures, a_port_hears_a_departure_once_no_peer_is_left_to_send) {
    csp::net::nameserver ns;
    run_nodes(ns, "leave-2", 3, [](csp::net::node& self) {
        auto inbox = self.open(5);
        auto control = self.open(6);
        switch (self.rank()) {
            case 1:
                self.send(0, 6, 1);  // a link to leave by (a departure before any link is a later matter)
                self.close();
                return;
            case 2:
                control.receive<int>();  // rank 0 saw rank 1 leave
                self.send(0, 5, 2);
                self.close();
                return;
            default:
                break;
        }
        EXPECT_EQ(control.receive<int>(), 1);
        ASSERT_TRUE(wait_until_departed(self, 1));
        self.send(2, 6, 1);
        EXPECT_EQ(inbox.receive<int>(), 2);  // rank 1's departure did not end the receive
        try {
            inbox.receive<int>();
            ADD_FAILURE() << "a receive with no sender left returned";
        } catch (const csp::net::peer_error& e) {
            EXPECT_EQ(e.peer(), 2);
            EXPECT_NE(std::string(e.what()).find("has left"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("no node of the job is left that could send to port 5 of node 0"),
                      std::string::npos)
                << e.what();
        }
    });
}

TEST(net_departures, a_port_opened_to_hear_each_departure_hears_every_one) {
    csp::net::nameserver ns;
    run_nodes(ns, "leave-3", 3, [](csp::net::node& self) {
        auto inbox = self.open(5, csp::net::departures::each);
        if (self.rank() != 0) {
            self.send(0, 6, self.rank());  // a link to leave by
            self.close();
            return;
        }
        std::vector<int> left;
        for (int i = 0; i < 2; ++i) {
            try {
                inbox.receive();
                ADD_FAILURE() << "a message came where a departure was expected";
            } catch (const csp::net::peer_error& e) {
                left.push_back(e.peer());
                // each departure in its own words, the last one's too
                EXPECT_EQ(std::string(e.what()).find("no node of the job is left"), std::string::npos) << e.what();
            }
        }
        std::sort(left.begin(), left.end());
        EXPECT_EQ(left, (std::vector<int>{1, 2}));
    });
}

// Regression: the "no node of the job is left" entry came once; the next
// receive from the port waited for ever, though no node could send to it.
TEST(net_departures, a_second_receive_after_the_last_sender_left_fails_instead_of_waiting_for_ever) {
    csp::net::nameserver ns;
    run_nodes(ns, "leave-twice", 2, [](csp::net::node& self) {
        auto inbox = self.open(5);
        if (self.rank() == 1) {
            self.send(0, 5, 3);
            self.close();
            return;
        }
        EXPECT_EQ(inbox.receive<int>(), 3);
        EXPECT_THROW(inbox.receive<int>(), csp::net::peer_error);
        int v = 0;
        const auto start = csp::clock::now();
        EXPECT_THROW(csp::select(csp::net::input(inbox, v), csp::timeout(5s)), csp::net::peer_error);
        EXPECT_THROW(inbox.receive<int>(), csp::net::peer_error);
        EXPECT_LT(csp::clock::now() - start, 1s);
        // The node's own sends still arrive, first.
        self.send(0, 5, 4);
        EXPECT_EQ(inbox.receive<int>(), 4);
        EXPECT_THROW(inbox.receive<int>(), csp::net::peer_error);
    });
}

// A port with no sender left is ready in a select, as a poisoned channel
// is: a priority select that lists it first throws its error although a
// later port holds a message. That message stays in its port: a select
// that leaves the failed port out (or lists it last) takes it, and only
// then meets that port's own failure. Both stay failed: every later select
// or receive that finds them empty throws, where the second used to wait
// for ever.
TEST(net_departures, a_select_meets_a_port_without_senders_in_its_place_and_loses_no_message) {
    csp::net::nameserver ns;
    run_nodes(ns, "leave-select", 2, [](csp::net::node& self) {
        auto first = self.open(1), second = self.open(2);
        if (self.rank() == 1) {
            self.send(0, 2, 7);
            self.close();
            return;
        }
        ASSERT_TRUE(wait_until_departed(self, 1));
        int x = 0, y = 0;
        const auto expect_left = [](int port, auto&& receive_once) {
            try {
                receive_once();
                ADD_FAILURE() << "a receive from port " << port << " with no sender left returned";
            } catch (const csp::net::peer_error& e) {
                EXPECT_EQ(e.peer(), 1);
                EXPECT_NE(std::string(e.what()).find("node 1 of job 'leave-select' has left"), std::string::npos)
                    << e.what();
                EXPECT_NE(std::string(e.what()).find("no node of the job is left that could send to port " +
                                                     std::to_string(port) + " of node 0"),
                          std::string::npos)
                    << e.what();
            }
        };
        const auto both = [&] { csp::select(csp::net::input(first, x), csp::net::input(second, y)); };
        expect_left(1, both);
        expect_left(1, both);  // port 1 stays failed
        expect_left(1, [&] { (void)first.receive<int>(); });
        EXPECT_EQ(csp::select(csp::net::input(first, x).when(false), csp::net::input(second, y)), 1u);
        EXPECT_EQ(y, 7);
        expect_left(2, [&] { csp::select(csp::net::input(first, x).when(false), csp::net::input(second, y)); });
        expect_left(2, [&] { csp::select(csp::net::input(second, y), csp::timeout(10s)); });
        expect_left(2, [&] { (void)second.receive<int>(); });
        EXPECT_EQ(x, 0);
        // A port opened now has no sender either.
        auto later = self.open(3);
        expect_left(3, [&] { (void)later.receive<int>(); });
    });
}

// Regression: a peer that ended before any link to it existed was never
// noticed, though the nameserver saw its registration end: a receive
// waiting for its first message hung.
TEST(net_departures, a_peer_gone_before_any_link_fails_the_receive_waiting_for_it) {
    csp::net::nameserver ns;
    run_nodes(ns, "gone-early", 2, [&ns](csp::net::node& self) {
        auto inbox = self.open(5);
        if (self.rank() == 1) {
            // Ends its node without ever sending (no link exists), once rank
            // 0 has registered: a job whose every node ended is forgotten.
            csp::net::lookup(ns.address(), "gone-early", 0, csp::clock::now() + 5s);
            return;
        }
        const auto start = csp::clock::now();
        try {
            inbox.receive<int>();
            ADD_FAILURE() << "a receive from a node that is gone returned";
        } catch (const csp::net::peer_error& e) {
            EXPECT_EQ(e.peer(), 1);
            EXPECT_NE(std::string(e.what()).find("registration with the nameserver ended"), std::string::npos)
                << e.what();
        }
        EXPECT_LT(csp::clock::now() - start, 5s);
        // And sends to it are refused with the same reason.
        EXPECT_THROW(self.send(1, 5, 0), csp::net::peer_error);
    });
}

// Regression: a node that registered after a peer's registration had ended
// was never told of it (only the nodes registered then were), and waited for
// that peer's first message for ever.
TEST(net_departures, a_node_that_joins_after_a_peer_ended_hears_it_is_gone) {
    csp::net::nameserver ns;
    // Rank 2's registration, held open, keeps the job (and its memory of
    // ended ranks) alive between the other two.
    csp::net::registration holder = csp::run([&] {
        return csp::net::register_node(ns.address(), "late-node", 2, 3, {"127.0.0.1", 1}, csp::clock::now() + 5s);
    });
    net_test::run_ranks(ns, "late-node", 3, {1}, [](csp::net::node&) {});  // comes and goes before rank 0 exists
    net_test::run_ranks(ns, "late-node", 3, {0}, [](csp::net::node& self) {
        auto inbox = self.open(5, csp::net::departures::each);
        csp::net::message m;
        try {
            const auto which = csp::select(csp::net::input(inbox, m), csp::timeout(10s));
            ADD_FAILURE() << (which == 1 ? "still waiting for node 1 after 10 s" : "a message came");
        } catch (const csp::net::peer_error& e) {
            EXPECT_EQ(e.peer(), 1);
            EXPECT_NE(std::string(e.what()).find("registration with the nameserver ended"), std::string::npos)
                << e.what();
        }
    });
}

// Regression: a node closing with a message for a peer that never
// registered waited for its connector's lookup, connect_timeout long (30 s by
// default), though its linger was shorter. Now the connector gives up when
// the linger runs out, and the message is reported as not delivered.
TEST(net_departures, a_node_closing_while_a_peer_never_registered_waits_only_its_linger) {
    csp::net::nameserver ns;
    auto o = net_test::options_for(ns, "never", 0, 2);
    o.linger = std::chrono::milliseconds(300);
    o.connect_timeout = std::chrono::seconds(20);
    net_test::captured_log log;
    csp::run([&] {
        csp::net::node self(o);
        self.send(1, 1, 42);  // rank 1 never comes
        const auto start = std::chrono::steady_clock::now();
        self.close();
        EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
        EXPECT_TRUE(net_test::has_fault(self, "lost node 1 of job 'never'")) << ::testing::PrintToString(self.faults());
    });
}

namespace {

// Every message event any node of this test process reports.
class message_log final : public csp::observer {
public:
    struct entry {
        bool sent;
        csp::message_ref m;
    };
    void on_event(const csp::event& e) override {
        if (e.message == nullptr) return;
        std::lock_guard lk(lock_);
        entries_.push_back({e.what == csp::event::kind::message_sent, *e.message});
    }
    std::vector<entry> entries() const {
        std::lock_guard lk(lock_);
        return entries_;
    }

private:
    mutable std::mutex lock_;
    std::vector<entry> entries_;
};

// Regression: a timeline joined the k-th send to the k-th receive of one
// (from, to, port, tag), counted where each process reported it; with
// several processes sending with one port and tag at once on two worker
// threads (or taking from one port at once) the counted order was not the
// link's, and arrows joined the wrong pairs. Each data frame now carries
// its sender's sequence, and both ends report it: joined by (from, to,
// sequence), every pair is one message (each has its own size here).
TEST(net_node, a_sequence_joins_each_send_to_its_receive_under_concurrent_senders_and_takers) {
    csp::net::nameserver ns;
    message_log log;
    csp::observer* before = csp::set_observer(&log);
    constexpr int senders = 4, per_sender = 300;
    run_nodes(ns, "sequence", 2, [&](csp::net::node& self) {
        if (self.rank() == 0) {
            csp::par_for(senders, [&](std::size_t i) {
                for (int j = 0; j < per_sender; ++j)
                    self.send(1, 7, std::vector<char>(1 + i * per_sender + static_cast<std::size_t>(j), 'x'), 42);
            });
        } else {
            auto inbox = self.open(7);
            csp::par_for(senders, [&](std::size_t) {
                for (int j = 0; j < per_sender; ++j) (void)inbox.receive<std::vector<char>>();
            });
        }
    }, 2);
    csp::set_observer(before);

    std::map<std::uint16_t, std::pair<std::vector<std::size_t>, std::vector<std::size_t>>> by_sequence;
    std::size_t sends = 0, receives = 0;
    for (const auto& [sent, m] : log.entries()) {
        if (m.port != 7) continue;
        ASSERT_NE(m.sequence, 0) << "an observed node's message without a sequence";
        auto& ends = by_sequence[m.sequence];
        (sent ? ends.first : ends.second).push_back(m.bytes);
        ++(sent ? sends : receives);
    }
    EXPECT_EQ(sends, std::size_t{senders * per_sender});
    EXPECT_EQ(receives, std::size_t{senders * per_sender});
    ASSERT_EQ(by_sequence.size(), std::size_t{senders * per_sender});
    for (const auto& [seq, ends] : by_sequence)
        EXPECT_EQ(ends.first, ends.second) << "sequence " << seq << " joins a send to another message's receive";
}

}  // namespace

// Regression: CSP_SIZE=0 (documented as "1 or more") was taken for
// "unknown" and the program ran as a job of one; it is refused by name.
TEST(net_node_options, a_job_size_of_zero_is_refused_by_name) {
    ::setenv("CSP_SIZE", "0", 1);
    try {
        (void)csp::net::node_options::from_environment();
        ADD_FAILURE() << "CSP_SIZE=0 was accepted";
    } catch (const csp::usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("CSP_SIZE=\"0\" is not valid: it must be a number from 1"),
                  std::string::npos)
            << e.what();
    }
    ::setenv("CSP_SIZE", "3", 1);
    EXPECT_EQ(csp::net::node_options::from_environment().size, 3);
    ::unsetenv("CSP_SIZE");
    EXPECT_EQ(csp::net::node_options::from_environment().size, 0);
}

// Regression: a CSP_IO_* setting the IO scheduler refuses ended the node's
// listener in the background ("listener stopped: CSP_IO_SPIN_US=..." in the
// log) while the program went on, deaf to its peers. Making the node now
// throws the scheduler's usage_error, naming the variable.
TEST(net_node_options, an_io_setting_the_scheduler_refuses_fails_the_node_by_name) {
    ::setenv("CSP_IO_SPIN_US", "-5", 1);
    std::string what = "no error";
    csp::run([&] {
        try {
            csp::net::node self{csp::net::node_options{}};
        } catch (const csp::usage_error& e) {
            what = e.what();
        }
    });
    ::unsetenv("CSP_IO_SPIN_US");
    EXPECT_NE(what.find("CSP_IO_SPIN_US=\"-5\" is not valid"), std::string::npos) << what;
    // And with the variable gone, a node of one runs.
    EXPECT_EQ(csp::run([] { return csp::net::node{csp::net::node_options{}}.size(); }), 1);
}

// Regression: a timeline file the node could not write was found only when
// the node closed, after the run, as one line in the log. The node now
// refuses it when made.
TEST(net_node_options, a_timeline_file_that_cannot_be_written_fails_the_node_by_name) {
    std::string what = "no error";
    csp::run([&] {
        csp::net::node_options o;
        o.trace = "/nonexistent-csp-folder/t.json";
        try {
            csp::net::node self{o};
        } catch (const csp::usage_error& e) {
            what = e.what();
        }
    });
    EXPECT_EQ(what, "node_options::trace (CSP_TRACE): cannot write /nonexistent-csp-folder/t.json");
}
