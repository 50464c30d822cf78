// Links over UCX (net/ucx_transport.hpp): which transport a link takes, and
// what it carries. The rest of test/net runs over UCX too (automatic is the
// default in a build with UCX) and again over TCP (ctest's tcp/ copies).
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>

#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "net/ucx_worker.hpp"
#include "net_fixture.hpp"
#include "test/csp/overflow.hpp"

namespace {

using net_test::run_nodes;

#if CSP_TEST_WITH_UCX

// A node counts a link over UCX once its own side of the UCX wire-up is done,
// which may come after the peer's frames, already sent over UCX, were taken
// here: waits (10 s at most) until it has.
void wait_for_ucx_link(csp::net::node& self) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (self.stats().links_over_ucx == 0 && std::chrono::steady_clock::now() < until)
        csp::sleep_for(std::chrono::milliseconds(1));
}

// Both nodes offer UCX: the link takes it, and a million messages arrive in
// order, each counted.
TEST(net_ucx, two_nodes_that_both_offer_ucx_use_it_and_lose_nothing) {
    csp::net::nameserver ns;
    constexpr std::uint64_t n = 1'000'000;
    std::vector<std::size_t> over_ucx(2);
    run_nodes(
        ns, "ucx-million", 2,
        [&](csp::net::node& self) {
            auto inbox = self.open(1);
            if (self.rank() == 0) {
                for (std::uint64_t i = 0; i < n; ++i) self.send(1, 1, i);
                EXPECT_EQ(inbox.receive<std::uint64_t>(), n);
            } else {
                std::uint64_t expect = 0;
                for (; expect < n; ++expect) ASSERT_EQ(inbox.receive<std::uint64_t>(), expect);
                self.send(0, 1, expect);
            }
            over_ucx[static_cast<std::size_t>(self.rank())] = self.stats().links_over_ucx;
        },
        1, [](int, csp::net::node_options& o) { o.transport = csp::net::transport_kind::automatic; });
    EXPECT_EQ(over_ucx[0], 1u);
    EXPECT_EQ(over_ucx[1], 1u);
}

// Streams 200,000 small frames from rank 0 to rank 1 in acknowledged
// bursts of 1,000, every frame checked in order, until some frame refused
// at first went at once after all (at most 10 times); the sender's stats.
csp::net::node_stats stream_into_a_full_queue(const std::string& job) {
    csp::net::nameserver ns;
    constexpr std::uint64_t n = 200'000, burst = 1'000;
    constexpr int most = 10;
    csp::net::node_stats sender;
    run_nodes(
        ns, job, 2,
        [&](csp::net::node& self) {
            auto inbox = self.open(1);
            for (int attempt = 0; attempt < most; ++attempt) {
                std::uint64_t again = 0;
                if (self.rank() == 0) {
                    for (std::uint64_t i = 0; i < n; ++i) {
                        self.send(1, 1, i);
                        if ((i + 1) % burst == 0) {
                            ASSERT_EQ(inbox.receive<std::uint64_t>(), i + 1);
                        }
                    }
                    sender = self.stats();
                    again = sender.sent_queued == sender.found_queue_full;
                    self.send(1, 1, again);
                } else {
                    for (std::uint64_t expect = 0; expect < n;) {
                        ASSERT_EQ(inbox.receive<std::uint64_t>(), expect);
                        if (++expect % burst == 0) self.send(0, 1, expect);
                    }
                    again = inbox.receive<std::uint64_t>();
                }
                if (!again) break;
            }
        },
        1, [](int, csp::net::node_options& o) { o.transport = csp::net::transport_kind::ucx; });
    return sender;
}

// A stream of small messages outruns its receiver and finds the peer's
// shared-memory queue full. Regression (a send record per message): such a
// frame got a record and a UCX request and waited in UCX's queue, UCX
// refused every later frame at once while one waited, and only the
// progress process (given no turn by a sender in a loop) worked the queue
// off: every frame after the first refused one was queued (all but the
// first ~60 of 200,000 here), and the sender became the slower side. The
// sender now polls the worker a few times and offers the frame again; its
// polls work the queue off as the receiver takes, so some frames refused
// at first go at once after all. That needs the receiver to run while the
// sender polls, which a loaded machine does not promise for any one
// stream: the stream (in bursts of 1,000, each acknowledged) is repeated
// until it happened, at most 10 times. Every frame arrives in order.
TEST(net_ucx, small_frames_refused_by_a_full_queue_are_offered_again_instead_of_queued) {
    const csp::net::node_stats sender = stream_into_a_full_queue("ucx-full-queue");
    EXPECT_GT(sender.found_queue_full, 0u);  // the stream did outrun its receiver
    // Queued: only frames still refused after the polls (before the change,
    // every frame refused at first, so the two were always equal).
    EXPECT_LT(sender.sent_queued, sender.found_queue_full);
}

// Regression (a_sender_sharing_its_core_yields_it_to_the_receiver_it_waits_for):
// with the sender and its receiver on one core (more ranks than cores),
// polls that keep the core cannot free a slot, since the receiver that
// would free it waits for that core: every refused frame was queued, in all
// 10 streams (1,902,199 of 1,902,199). The retries now yield the core.
TEST(net_ucx, a_sender_sharing_its_core_yields_it_to_the_receiver_it_waits_for) {
    // Both nodes' threads inherit this thread's CPU set; the binary's later
    // tests get the whole set back however this one ends.
    struct pinned_to_one_cpu {
        cpu_set_t was;
        pinned_to_one_cpu() {
            if (sched_getaffinity(0, sizeof was, &was) != 0) throw std::runtime_error("sched_getaffinity failed");
            int cpu = 0;
            while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &was)) ++cpu;
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            if (sched_setaffinity(0, sizeof one, &one) != 0) throw std::runtime_error("sched_setaffinity failed");
        }
        ~pinned_to_one_cpu() { sched_setaffinity(0, sizeof was, &was); }
    };
    csp::net::node_stats sender;
    {
        const pinned_to_one_cpu pin;
        sender = stream_into_a_full_queue("ucx-one-core");
    }
    EXPECT_GT(sender.found_queue_full, 0u);
    EXPECT_LT(sender.sent_queued, sender.found_queue_full);
}

// The same stream to a receiver whose thread stops for 2 ms every 20,000
// messages, so that the sender's polls do not free a slot and frames are
// queued in UCX, with frames offered again at once after them: UCX keeps
// its endpoint's order across both (a frame offered at once while earlier
// ones wait in its queue is refused), so every message arrives in order.
TEST(net_ucx, frames_queued_behind_a_stalled_receiver_and_frames_sent_at_once_keep_their_order) {
    csp::net::nameserver ns;
    constexpr std::uint64_t n = 200'000;
    std::size_t queued = 0;
    run_nodes(
        ns, "ucx-stalled-receiver", 2,
        [&](csp::net::node& self) {
            auto inbox = self.open(1);
            if (self.rank() == 0) {
                for (std::uint64_t i = 0; i < n; ++i) self.send(1, 1, i);
                EXPECT_EQ(inbox.receive<std::uint64_t>(), n);
                queued = self.stats().sent_queued;
            } else {
                std::uint64_t expect = 0;
                for (; expect < n; ++expect) {
                    // 10 ms: long enough that the sender fills the queue
                    // even when a loaded machine deschedules it for a while
                    // (2 ms stalls all missed once, beside a sanitizer build).
                    if (expect % 20'000 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
                    ASSERT_EQ(inbox.receive<std::uint64_t>(), expect);
                }
                self.send(0, 1, expect);
            }
        },
        1, [](int, csp::net::node_options& o) { o.transport = csp::net::transport_kind::ucx; });
    EXPECT_GT(queued, 0u);  // the stalls made the paths mix
}

// Large values go by UCX's rendezvous straight into the message's own block,
// on one and two workers; every byte checked.
TEST(net_ucx, large_messages_arrive_intact_on_one_and_two_workers) {
    for (std::size_t threads : {std::size_t{1}, std::size_t{2}}) {
        csp::net::nameserver ns;
        run_nodes(
            ns, "ucx-large", 2,
            [&](csp::net::node& self) {
                auto inbox = self.open(3);
                if (self.rank() == 0) {
                    for (std::size_t size : {std::size_t{1} << 10, std::size_t{1} << 16, std::size_t{1} << 20,
                                             std::size_t{8} << 20}) {
                        std::vector<double> v(size / sizeof(double));
                        std::iota(v.begin(), v.end(), static_cast<double>(size));
                        self.send(1, 3, std::move(v));
                    }
                    EXPECT_EQ(inbox.receive<int>(), 4);
                } else {
                    int good = 0;
                    for (std::size_t size : {std::size_t{1} << 10, std::size_t{1} << 16, std::size_t{1} << 20,
                                             std::size_t{8} << 20}) {
                        const csp::net::message m = inbox.receive();
                        const auto view = m.view<double>();
                        ASSERT_EQ(view.size(), size / sizeof(double));
                        bool same = true;
                        for (std::size_t i = 0; i < view.size(); ++i)
                            same = same && view[i] == static_cast<double>(size) + static_cast<double>(i);
                        good += same;
                    }
                    self.send(0, 3, good);
                    wait_for_ucx_link(self);
                    EXPECT_EQ(self.stats().links_over_ucx, 1u);
                }
            },
            threads, [](int, csp::net::node_options& o) { o.transport = csp::net::transport_kind::automatic; });
    }
}

// Sending processes give their frames to UCX themselves once the link is up
// and nothing is still on the switch's path to that peer; before that (the
// first sends race the link's set-up) frames go through the switch. Four
// senders on two workers, small and split (>= 64 KiB) frames mixed. Phase 1:
// each sender starts before the link is up and goes on for 3,000 messages
// after it came up, so the switch's path drains while they send. Phase 2,
// after the peer counted phase 1: every message goes directly. Every message
// arrives, each sender's in the order sent.
TEST(net_ucx, direct_sends_keep_each_senders_order_across_the_switch_path) {
    constexpr std::uint32_t senders = 4;
    constexpr std::uint32_t after_link = 3'000, phase2 = 5'000;
    const auto message = [](std::uint32_t sender, std::uint32_t i) {
        std::vector<std::uint32_t> v(i % 1000 == 999 ? 20'000 : 2, i);  // every 1,000th is split
        v[0] = sender;
        return v;
    };
    csp::net::nameserver ns;
    std::uint32_t phase1 = 0;
    std::size_t direct1 = 0, direct2 = 0;
    run_nodes(
        ns, "ucx-direct", 2,
        [&](csp::net::node& self) {
            auto inbox = self.open(5);
            auto counted = self.open(6);
            if (self.rank() == 0) {
                std::vector<std::uint32_t> sent(senders, 0);
                csp::par_for(senders, [&](std::size_t s) {
                    std::uint32_t& i = sent[s];
                    for (std::uint32_t left = after_link; left > 0; ++i) {
                        self.send(1, 5, message(static_cast<std::uint32_t>(s), i));
                        const bool up = self.stats().links_over_ucx > 0;
                        if (up) --left;
                        if (i % 64 == 0) up ? (void)csp::yield() : csp::sleep_for(std::chrono::microseconds(50));
                    }
                });
                for (std::uint32_t n : sent) phase1 += n;
                self.send(1, 5, std::vector<std::uint32_t>{senders, phase1});
                EXPECT_EQ(counted.receive<std::uint32_t>(), phase1);
                direct1 = self.stats().sent_direct;
                csp::par_for(senders, [&](std::size_t s) {
                    for (std::uint32_t k = 0; k < phase2; ++k, ++sent[s]) {
                        self.send(1, 5, message(static_cast<std::uint32_t>(s), sent[s]));
                        if (k % 64 == 0) csp::yield();
                    }
                });
                EXPECT_EQ(inbox.receive<std::uint32_t>(), senders * phase2);
                direct2 = self.stats().sent_direct - direct1;
            } else {
                std::vector<std::uint32_t> next(senders, 0);
                const auto take = [&](const std::vector<std::uint32_t>& v) {
                    ASSERT_GE(v.size(), 2u);
                    ASSERT_LT(v[0], senders);
                    ASSERT_EQ(v[1], next[v[0]]) << "sender " << v[0];
                    ASSERT_EQ(v.size(), next[v[0]] % 1000 == 999 ? 20'000u : 2u);
                    ++next[v[0]];
                };
                std::uint32_t got = 0;
                for (;; ++got) {
                    const auto v = inbox.receive<std::vector<std::uint32_t>>();
                    if (v.size() == 2 && v[0] == senders) {
                        ASSERT_EQ(v[1], got);
                        break;
                    }
                    take(v);
                }
                self.send(0, 6, got);
                for (got = 0; got < senders * phase2; ++got) take(inbox.receive<std::vector<std::uint32_t>>());
                self.send(0, 5, got);
            }
        },
        2, [](int, csp::net::node_options& o) { o.transport = csp::net::transport_kind::ucx; });
    EXPECT_LT(direct1, std::size_t{phase1});  // the link was not up for the first sends
    EXPECT_EQ(direct2, std::size_t{senders * phase2});
}

// Frames may complete out of order: a frame of 64 KiB and more goes by
// UCX's rendezvous and waits for the receiver to fetch it, while the short
// frames sent after it are already in. The worker hands each peer's frames
// out in the order they came, whatever order they complete in: every
// message, of every size (short, eager in several fragments, by
// rendezvous), arrives in the order sent, every byte checked.
TEST(net_ucx, frames_that_complete_out_of_order_are_handed_out_in_the_order_sent) {
    constexpr std::uint32_t n = 6'000;
    // Sizes in elements: 2 (short), 700 (2.8 KiB, eager), 5,000 (20 KiB,
    // eager), 17,000 (68 KiB, by rendezvous).
    const auto size_of = [](std::uint32_t i) -> std::size_t {
        return i % 7 == 3 ? 700 : i % 97 == 50 ? 5'000 : i % 13 == 5 ? 17'000 : 2;
    };
    csp::net::nameserver ns;
    std::uint32_t received = 0;
    bool over_ucx = false;
    run_nodes(
        ns, "ucx-reorder", 2,
        [&](csp::net::node& self) {
            auto inbox = self.open(3);
            if (self.rank() == 0) {
                for (std::uint32_t i = 0; i < n; ++i) {
                    std::vector<std::uint32_t> v(size_of(i), i);
                    v.back() = ~i;
                    self.send(1, 3, std::move(v));
                    if (i % 256 == 0) csp::yield();
                }
                EXPECT_EQ(inbox.receive<std::uint32_t>(), n);
            } else {
                for (std::uint32_t i = 0; i < n; ++i) {
                    const auto v = inbox.receive<std::vector<std::uint32_t>>();
                    ASSERT_EQ(v.size(), size_of(i)) << "message " << i;
                    ASSERT_EQ(v.front(), i);
                    ASSERT_EQ(v.back(), ~i);
                    ASSERT_TRUE(std::all_of(v.begin(), v.end() - 1, [i](std::uint32_t x) { return x == i; }));
                    ++received;
                }
                self.send(0, 3, received);
                over_ucx = self.stats().links_over_ucx > 0;
            }
        },
        1, [](int, csp::net::node_options& o) { o.transport = csp::net::transport_kind::ucx; });
    EXPECT_EQ(received, n);
    EXPECT_TRUE(over_ucx);
}

// Regression (a lost wake-up): closing a lost peer's endpoint progresses the
// worker outside the progress process, which can take in other peers'
// messages and spend the event that process sleeps on; forget() must wake it
// (once per endpoint closed). A landing withdrawn before any payload matched
// it progresses nothing and wakes nobody.
TEST(net_ucx, a_worker_progressed_outside_its_progress_process_wakes_it) {
    int wakes = 0;
    csp::net::detail::ucx_worker w(false, [&] { ++wakes; });
    w.expect(7, 1u << 20);
    w.connect(7, w.address());  // an endpoint to itself: closing it progresses the worker
    w.forget(7);
    EXPECT_EQ(wakes, 1);
    w.forget(7);  // no endpoint left to close
    w.forget(8);  // never known
    EXPECT_EQ(wakes, 1);
    std::vector<std::byte> buffer(64);
    w.land(7, 1, 2, buffer.data(), buffer.size(), 0);
    w.unland(7, 1, 2);
    EXPECT_EQ(wakes, 1);
}

// A node told to use TCP offers nothing: its links take TCP, even with a
// peer that offers UCX, and carry everything.
// A node's UCX worker installs UCX's own SIGSEGV handler (it prints a
// backtrace), after the runtime installed the guard-page handler: a process
// that overflows its stack in a node linked over UCX is still named.
TEST(net_ucx, a_process_overflowing_its_stack_in_a_node_linked_over_ucx_is_named) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            csp::net::nameserver ns;
            run_nodes(
                ns, "ucx-overflow", 2,
                [&](csp::net::node& self) {
                    auto inbox = self.open(1);
                    if (self.rank() == 0) {
                        self.send(1, 1, 1);
                        (void)inbox.receive<int>();  // never sent: rank 1 takes the program down
                    } else {
                        (void)inbox.receive<int>();
                        wait_for_ucx_link(self);
                        if (self.stats().links_over_ucx == 0) std::_Exit(3);
                        csp::par(csp::proc("deep", [] { csp_test::descend(0, csp_test::endless); }));
                    }
                },
                1, [](int, csp::net::node_options& o) { o.transport = csp::net::transport_kind::automatic; });
        },
        "csp: process 'deep' overflowed its [0-9]+-byte stack: it reached the guard page below it");
}

TEST(net_ucx, a_node_that_offers_tcp_only_gets_tcp_links) {
    csp::net::nameserver ns;
    std::vector<std::size_t> over_ucx(2, 99);
    run_nodes(
        ns, "ucx-mixed", 2,
        [&](csp::net::node& self) {
            auto inbox = self.open(1);
            const int other = 1 - self.rank();
            for (int i = 0; i < 1000; ++i) self.send(other, 1, i);
            for (int i = 0; i < 1000; ++i) ASSERT_EQ(inbox.receive<int>(), i);
            over_ucx[static_cast<std::size_t>(self.rank())] = self.stats().links_over_ucx;
        },
        1, [](int rank, csp::net::node_options& o) {
            o.transport = rank == 0 ? csp::net::transport_kind::tcp : csp::net::transport_kind::automatic;
        });
    EXPECT_EQ(over_ucx[0], 0u);
    EXPECT_EQ(over_ucx[1], 0u);
}

// A node says whether a message may reach it over TCP, so that a computing
// process knows whether to let the IO scheduler poll (csp::yield_to_io): not
// while its links are over UCX, and for good once one link chose TCP. Nodes
// 0 and 1 offer UCX, node 2 TCP only; 0 and 1 talk first, then 1 and 2.
TEST(net_ucx, a_node_receives_through_io_only_once_a_link_is_over_tcp) {
    csp::net::nameserver ns;
    std::vector<int> ucx_only(3, -1), after_tcp(3, -1);
    run_nodes(
        ns, "ucx-through-io", 3,
        [&](csp::net::node& self) {
            auto inbox = self.open(1);
            const auto me = static_cast<std::size_t>(self.rank());
            if (self.rank() == 0) {
                self.send(1, 1, 0);
                EXPECT_EQ(inbox.receive<int>(), 1);
                wait_for_ucx_link(self);
                ucx_only[me] = self.receives_through_io();
                EXPECT_EQ(inbox.receive<int>(), 12);  // nodes 1 and 2 have talked
                after_tcp[me] = self.receives_through_io();
            } else if (self.rank() == 1) {
                EXPECT_EQ(inbox.receive<int>(), 0);
                self.send(0, 1, 1);
                wait_for_ucx_link(self);
                ucx_only[me] = self.receives_through_io();
                self.send(2, 1, 1);
                EXPECT_EQ(inbox.receive<int>(), 2);
                after_tcp[me] = self.receives_through_io();
                self.send(0, 1, 12);
            } else {
                EXPECT_EQ(inbox.receive<int>(), 1);
                self.send(1, 1, 2);
                after_tcp[me] = self.receives_through_io();
            }
        },
        1, [](int rank, csp::net::node_options& o) {
            o.transport = rank == 2 ? csp::net::transport_kind::tcp : csp::net::transport_kind::automatic;
        });
    EXPECT_EQ(ucx_only[0], 0);
    EXPECT_EQ(ucx_only[1], 0);
    EXPECT_EQ(after_tcp[0], 0);  // its only link is still over UCX
    EXPECT_EQ(after_tcp[1], 1);
    EXPECT_EQ(after_tcp[2], 1);
}

// A node that computes in 20 us steps with a plain csp::yield() between them
// takes a UCX message in within a few steps, with no poll of the IO
// scheduler: its UCX progress process does not go to sleep while the node's
// other processes keep it busy. Each message comes after 3 ms of quiet (so
// that an idle progress process would have armed its event fd and slept,
// to be woken only by the busy poll, once per millisecond, about 50 steps).
// Regression (dataflow over UCX): a task graph's arrivals waited for a poll
// after every body, a system call that cost a fifth of a 2-node Jacobi step.
TEST(net_ucx, a_computing_node_takes_ucx_messages_in_within_a_few_steps_without_polling) {
    csp::net::nameserver ns;
    constexpr int messages = 15;
    std::atomic<int> step{0}, sent_at{-1};
    std::vector<int> delays;
    run_nodes(
        ns, "ucx-computing", 2,
        [&](csp::net::node& self) {
            auto inbox = self.open(1);
            if (self.rank() == 0) {
                self.send(1, 1, -1);
                EXPECT_EQ(inbox.receive<int>(), -1);  // node 1 computes from now on
                for (int k = 0; k < messages; ++k) {
                    csp::sleep_for(std::chrono::milliseconds(3));
                    sent_at = step.load();
                    self.send(1, 1, k);
                }
                return;
            }
            EXPECT_EQ(inbox.receive<int>(), -1);
            self.send(0, 1, -1);
            std::atomic<bool> done{false};
            csp::par(
                [&] {
                    for (int k = 0; k < messages; ++k) {
                        EXPECT_EQ(inbox.receive<int>(), k);
                        delays.push_back(step.load() - sent_at.load());
                    }
                    done = true;
                },
                [&] {
                    for (int s = 0; !done.load(); ++s) {
                        step = s;
                        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
                        while (std::chrono::steady_clock::now() < until) {
                        }
                        csp::yield();
                    }
                });
        },
        1, [](int, csp::net::node_options& o) { o.transport = csp::net::transport_kind::ucx; });
    ASSERT_EQ(delays.size(), std::size_t{messages});
    std::sort(delays.begin(), delays.end());
    // The median: a virtual machine may stall one message's steps.
    EXPECT_LE(delays[messages / 2], 5) << "steps between a send and its arrival, median of " << messages;
}

// A receiver on an empty port of a one-thread node polls the worker itself
// (port.hpp) and takes its messages from it: a ping-pong's replies are
// taken that way (node_stats::taken_polling), and a stream to two ports,
// where one process polls while the other's messages go to its channel,
// arrives whole and in order at both.
TEST(net_ucx, a_receiver_that_polls_takes_its_messages_from_the_worker_in_order) {
    csp::net::nameserver ns;
    constexpr int round_trips = 5'000, stream = 50'000;
    std::vector<std::size_t> polled(2);
    run_nodes(
        ns, "ucx-polling", 2,
        [&](csp::net::node& self) {
            auto one = self.open(1);
            auto two = self.open(2);
            if (self.rank() == 0) {
                for (int i = 0; i < round_trips; ++i) {
                    self.send(1, 1, i);
                    ASSERT_EQ(one.receive<int>(), i);
                }
                for (int i = 0; i < stream; ++i) self.send(1, 1 + i % 2, i);
                EXPECT_EQ(one.receive<int>(), stream);
            } else {
                for (int i = 0; i < round_trips; ++i) self.send(0, 1, one.receive<int>());
                int last_one = -2, last_two = -1;  // port 1 gets the even values, port 2 the odd
                csp::par(
                    [&] {
                        for (int k = 0; k < stream / 2; ++k) {
                            const int v = one.receive<int>();
                            ASSERT_EQ(v, last_one + 2);
                            last_one = v;
                        }
                    },
                    [&] {
                        for (int k = 0; k < stream / 2; ++k) {
                            const int v = two.receive<int>();
                            ASSERT_EQ(v, last_two + 2);
                            last_two = v;
                        }
                    });
                EXPECT_EQ(last_one, stream - 2);
                EXPECT_EQ(last_two, stream - 1);
                self.send(0, 1, stream);
            }
            polled[static_cast<std::size_t>(self.rank())] = self.stats().taken_polling;
        },
        1, [](int, csp::net::node_options& o) { o.transport = csp::net::transport_kind::ucx; });
    // Nearly every reply on a quiet machine (4,700-5,000 of 5,000 at node
    // 0); a loaded one deschedules nodes for longer than a poll lasts (8 in
    // one run beside the rest of the suite), and then the progress process
    // hands the message over.
    EXPECT_GT(polled[0] + polled[1], 0u) << "messages taken by polling receivers";
    EXPECT_LE(polled[0], std::size_t{round_trips + 1});
    EXPECT_LE(polled[1], std::size_t{round_trips + stream});
}

// A polling receiver gives its thread up: the message it waits for is sent
// only once another process of its node has computed for a while (200
// steps of 20 us, yielding between them), which it could not do if the
// receiver kept the thread.
TEST(net_ucx, a_polling_receiver_lets_the_other_processes_of_its_node_compute) {
    csp::net::nameserver ns;
    run_nodes(
        ns, "ucx-polling-computing", 2,
        [&](csp::net::node& self) {
            auto inbox = self.open(1);
            if (self.rank() == 0) {
                const int steps = inbox.receive<int>();
                self.send(1, 1, steps * 2);
                return;
            }
            int got = 0;
            csp::par([&] { got = inbox.receive<int>(); },
                     [&] {
                         int s = 0;
                         for (; s < 200; ++s) {
                             const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
                             while (std::chrono::steady_clock::now() < until) {
                             }
                             csp::yield();
                         }
                         self.send(0, 1, s);
                     });
            EXPECT_EQ(got, 400);
        },
        1, [](int, csp::net::node_options& o) { o.transport = csp::net::transport_kind::ucx; });
}

// Receivers do not poll on a node of a runtime with several worker threads,
// nor on nodes that share one runtime (each would poll for a message the
// other had not had the thread to send): every message still arrives.
TEST(net_ucx, receivers_poll_only_on_a_one_thread_node_alone_in_its_runtime) {
    csp::net::nameserver ns;
    constexpr int round_trips = 2'000;
    const auto ping_pong = [](csp::net::node& self) {
        auto inbox = self.open(1);
        for (int i = 0; i < round_trips; ++i) {
            if (self.rank() == 0) self.send(1, 1, i);
            EXPECT_EQ(inbox.receive<int>(), i);
            if (self.rank() == 1) self.send(0, 1, i);
        }
        return self.stats().taken_polling;
    };
    std::vector<std::size_t> polled(2, 99);
    run_nodes(
        ns, "ucx-two-threads", 2,
        [&](csp::net::node& self) { polled[static_cast<std::size_t>(self.rank())] = ping_pong(self); }, 2,
        [](int, csp::net::node_options& o) { o.transport = csp::net::transport_kind::ucx; });
    EXPECT_EQ(polled, (std::vector<std::size_t>{0, 0}));

    polled.assign(2, 99);
    csp::run([&] {
        csp::par_for(2, [&](std::size_t r) {
            auto o = net_test::options_for(ns, "ucx-one-runtime", static_cast<int>(r), 2);
            o.transport = csp::net::transport_kind::ucx;
            csp::net::node self(o);
            polled[r] = ping_pong(self);
        });
    });
    EXPECT_EQ(polled, (std::vector<std::size_t>{0, 0}));
}

// A job all of whose ranks run on this host, linked over UCX, shares host
// memory (the collectives' table then reads the host level); a node that
// does not know its host's ranks, or links over TCP, does not.
TEST(net_ucx, nodes_of_one_host_over_ucx_share_host_memory_and_others_do_not) {
    csp::net::nameserver ns;
    struct setting {
        int local_size;
        csp::net::transport_kind transport;
        bool expected;
    };
    int i = 0;
    for (const setting& s : {setting{2, csp::net::transport_kind::ucx, true},
                             setting{0, csp::net::transport_kind::ucx, false},
                             setting{1, csp::net::transport_kind::ucx, false},
                             setting{2, csp::net::transport_kind::tcp, false}}) {
        std::vector<int> shares(2, -1);
        run_nodes(
            ns, "ucx-host-" + std::to_string(i++), 2,
            [&](csp::net::node& self) {
                shares[static_cast<std::size_t>(self.rank())] = self.shares_host_memory() ? 1 : 0;
            },
            1, [&](int, csp::net::node_options& o) {
                o.local_size = s.local_size;
                o.transport = s.transport;
            });
        EXPECT_EQ(shares[0], s.expected ? 1 : 0) << "local_size " << s.local_size;
        EXPECT_EQ(shares[1], s.expected ? 1 : 0) << "local_size " << s.local_size;
    }
}

// A node that requires UCX refuses a peer that offers TCP only, naming why;
// the peer hears of the link's loss too.
TEST(net_ucx, a_node_that_requires_ucx_names_a_peer_that_offers_tcp_only) {
    csp::net::nameserver ns;
    net_test::captured_log log;
    run_nodes(
        ns, "ucx-required", 2,
        [&](csp::net::node& self) {
            auto inbox = self.open(1);
            if (self.rank() == 0) {
                self.send(1, 1, 5);
                net_test::expect_peer_error(inbox, 1, "offers TCP only, and this node requires UCX");
            } else {
                EXPECT_THROW(inbox.receive(), csp::net::peer_error);
            }
        },
        1, [](int rank, csp::net::node_options& o) {
            o.transport = rank == 0 ? csp::net::transport_kind::ucx : csp::net::transport_kind::tcp;
        });
}

#else

TEST(net_ucx, a_build_without_ucx_refuses_to_require_it_by_name) {
    csp::net::nameserver ns;
    try {
        run_nodes(ns, "no-ucx", 1, [](csp::net::node&) {}, 1,
                  [](int, csp::net::node_options& o) { o.transport = csp::net::transport_kind::ucx; });
        ADD_FAILURE() << "a node required UCX in a build without it";
    } catch (const csp::usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("has no UCX"), std::string::npos) << e.what();
    }
}

#endif

// Regression: node_options::oversubscribed() asked glibc for the host's
// hardware threads at every call, which opens and reads a sysfs file; the
// host board's collectives ask at every call, and an allreduce of 8 B at 2
// ranks took 6 us instead of 0.15. It is read once: 10,000 calls make no
// read system call (/proc/self/io counts them; reading it is one or two).
static long read_syscalls() {
    std::ifstream io("/proc/self/io");
    std::string key;
    long value = 0;
    while (io >> key >> value)
        if (key == "syscr:") return value;
    return -1;
}

TEST(net_ucx, node_options_oversubscribed_reads_the_hosts_threads_once) {
    csp::net::node_options o;
    o.local_size = 1'000'000;
    EXPECT_TRUE(o.oversubscribed());  // the first call may read
    const long before = read_syscalls();
    ASSERT_GE(before, 0) << "no syscr in /proc/self/io";
    bool all = true;
    for (int i = 0; i < 10'000; ++i) all = o.oversubscribed() && all;
    const long after = read_syscalls();
    EXPECT_TRUE(all);
    EXPECT_LT(after - before, 10) << "read system calls during 10,000 calls";
    o.local_size = 1;
    EXPECT_FALSE(o.oversubscribed());
}

// Oversubscribed means more ranks than the CPUs they may use: local_cpus
// when known (csp-launch's CSP_LOCAL_CPUS), not the host's hardware threads.
TEST(net_ucx, node_options_oversubscribed_counts_the_cpus_the_job_may_use) {
    csp::net::node_options o;
    o.local_size = 2;
    o.local_cpus = 1;
    EXPECT_TRUE(o.oversubscribed());
    o.local_cpus = 2;
    EXPECT_FALSE(o.oversubscribed());
    o.local_size = 3;
    EXPECT_TRUE(o.oversubscribed());
    o.local_size = 0;  // unknown: never
    EXPECT_FALSE(o.oversubscribed());
}

// How many ranks share the host (which decides whether an idle UCX spin
// keeps its core): csp-launch's CSP_LOCAL_SIZE first, then Open MPI's; 0
// when neither is set; a malformed value is refused by name. No thread runs
// beside the setenv calls.
TEST(net_ucx, node_options_read_how_many_ranks_share_the_host) {
    EXPECT_EQ(csp::net::node_options::from_environment().local_size, 0);
    ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "6", 1);
    EXPECT_EQ(csp::net::node_options::from_environment().local_size, 6);
    ::setenv("CSP_LOCAL_SIZE", "12", 1);
    EXPECT_EQ(csp::net::node_options::from_environment().local_size, 12);
    EXPECT_EQ(csp::net::node_options::from_environment().local_cpus, 0);
    ::setenv("CSP_LOCAL_CPUS", "4", 1);
    EXPECT_EQ(csp::net::node_options::from_environment().local_cpus, 4);
    ::unsetenv("CSP_LOCAL_CPUS");
    ::setenv("CSP_LOCAL_SIZE", "many", 1);
    try {
        (void)csp::net::node_options::from_environment();
        ADD_FAILURE() << "CSP_LOCAL_SIZE=many was accepted";
    } catch (const csp::usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("CSP_LOCAL_SIZE"), std::string::npos) << e.what();
    }
    ::unsetenv("CSP_LOCAL_SIZE");
    ::unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
}

// CSP_TRANSPORT with a value that is none of the three is refused by name.
// The variable is set before the nameserver's thread starts and cleared after
// it ends: setenv beside a running thread's getenv is a data race.
TEST(net_ucx, a_bad_csp_transport_is_refused_by_name) {
    ::setenv("CSP_TRANSPORT", "infiniband", 1);
    {
        csp::net::nameserver ns;
        try {
            run_nodes(ns, "bad-transport", 1, [](csp::net::node&) {});
            ADD_FAILURE() << "CSP_TRANSPORT=infiniband was accepted";
        } catch (const csp::usage_error& e) {
            EXPECT_NE(std::string(e.what()).find("CSP_TRANSPORT='infiniband'"), std::string::npos) << e.what();
        }
    }
    ::unsetenv("CSP_TRANSPORT");
}

#if CSP_TEST_WITH_UCX
// A row held for its expected landing (net/landing.hpp) whose sender is
// killed: the receive fails naming the peer, the held frame is let go with
// the peer's link (UCX's descriptor released, nothing fetched from a dead
// process; the hold limit here is a minute), and the node closes.
TEST(net_ucx, a_row_held_for_its_landing_is_let_go_when_its_sender_is_killed) {
    if (const char* t = std::getenv("CSP_TRANSPORT"); t != nullptr && std::string(t) == "tcp")
        GTEST_SKIP() << "the peer takes CSP_TRANSPORT=tcp: no UCX link";
    csp::net::nameserver ns;
    const pid_t pid = net_test::spawn_ready_node(NET_TEST_PEER, {"row", "16384"}, ns, "held-killed", 1, 2);
    bool was_held = false, failed = false;
    std::size_t held_after = 1;
    net_test::run_ranks(
        ns, "held-killed", 2, {0},
        [&](csp::net::node& self) {
            auto inbox = self.open(1);
            csp::net::landing e = self.expect(1, 1, 5);
            self.send(1, 1, std::uint64_t{1});
            const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
            while (self.stats().held != 1 && std::chrono::steady_clock::now() < until)
                csp::sleep_for(std::chrono::microseconds(200));
            was_held = self.stats().held == 1;
            ::kill(pid, SIGKILL);
            try {
                (void)inbox.receive<std::vector<double>>();
            } catch (const csp::net::peer_error& err) {
                failed = err.peer() == 1;
            }
            // The link ends (and lets its frames go) just after the ports
            // hear of the loss.
            const auto gone = std::chrono::steady_clock::now() + std::chrono::seconds(20);
            while (self.stats().held != 0 && std::chrono::steady_clock::now() < gone)
                csp::sleep_for(std::chrono::microseconds(200));
            held_after = self.stats().held;
        },
        1,
        [](int, csp::net::node_options& o) {
            o.transport = csp::net::transport_kind::ucx;
            o.expected_hold = std::chrono::seconds(60);
        });
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status));
    EXPECT_TRUE(was_held);
    EXPECT_TRUE(failed);
    EXPECT_EQ(held_after, 0u);
}
#endif

}  // namespace
