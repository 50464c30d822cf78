// A net_communicator on a node of its own: the port it owns, and a job of one.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <memory_resource>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "collectives/collectives.hpp"
#include "collectives/hybrid_communicator.hpp"
#include "collectives/local_communicator.hpp"
#include "collectives/net_communicator.hpp"
#include "collectives/receive_view.hpp"
#include "collectives/relay.hpp"
#include "csp/runtime.hpp"
#include "net/net.hpp"
#include "test/net/net_fixture.hpp"

namespace cc = csp::collectives;
using namespace std::chrono_literals;

namespace {

std::string error_of(auto&& f) {
    try {
        f();
    } catch (const csp::usage_error& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

// Regression: the communicator's port could be opened by the program too,
// silently splitting the collective messages between two readers.
TEST(net_communicator_port, opening_the_communicators_port_is_an_error_naming_its_owner) {
    csp::run([] {
        csp::net::node self{csp::net::node_options{}};
        {
            cc::net_communicator comm(self);
            const auto open = error_of([&] { self.open(cc::net_communicator::default_port); });
            EXPECT_NE(open.find("reserved"), std::string::npos) << open;
            EXPECT_NE(open.find("net_communicator"), std::string::npos) << open;
            EXPECT_NE(open.find("port 0x434f4c4c (\"COLL\")"), std::string::npos) << open;
            const auto second = error_of([&] { cc::net_communicator again(self); });
            EXPECT_NE(second.find("already owned by net_communicator"), std::string::npos) << second;
            EXPECT_EQ(cc::allreduce(comm, 21, cc::sum{}), 21);  // still the only reader, still working
        }
        // Released with the communicator: a new one may take it.
        cc::net_communicator later(self);
        EXPECT_EQ(cc::allreduce(later, 4, cc::sum{}), 4);
        self.close();
    });
}

// A communicator of a closed node could receive nothing: making one is
// refused by name.
TEST(net_communicator_port, a_communicator_of_a_closed_node_is_refused) {
    csp::run([] {
        csp::net::node self{csp::net::node_options{}};
        self.close();
        const auto e = error_of([&] { cc::net_communicator comm(self); });
        EXPECT_EQ(e, "net_communicator: port 0x434f4c4c (\"COLL\") of a closed node (default/0) can receive nothing");
    });
}

// Regression: a receive of a communicator whose node closed before any
// link to the sender existed (a broadcast at a rank that only receives,
// after close) waited for ever: no departure could reach it, and only the
// runtime's deadlock report ended it. The node now tells the communicator
// it closed, and every receive from another rank fails, also one that was
// waiting then. (What came before is still taken: a port's case, in
// net_node.a_port_of_a_closed_node_gives_what_came_then_says_the_node_closed.)
TEST(net_communicator_port, a_receive_of_a_communicator_whose_node_closed_fails) {
    csp::net::nameserver ns;
    std::vector<std::string> errors;
    std::atomic<bool> done{false};
    net_test::run_nodes(ns, "closed-comm", 2, [&](csp::net::node& self) {
        cc::net_communicator comm(self);
        const cc::tag never = comm.next_tag(), later = comm.next_tag();
        if (self.rank() == 1) {
            while (!done.load()) csp::sleep_for(5ms);  // neither sends nor leaves meanwhile
            return;
        }
        csp::par(
            [&] {
                try {
                    comm.receive<int>(1, never);
                } catch (const csp::retired_error& e) {
                    errors.push_back(e.what());
                }
            },
            [&] {
                csp::yield();
                self.close();
            });
        try {
            (void)cc::broadcast(comm, 0, 1);  // rank 0 only receives
        } catch (const csp::retired_error& e) {
            errors.push_back(e.what());
        }
        try {
            comm.receive<int>(1, later);
        } catch (const csp::retired_error& e) {
            errors.push_back(e.what());
        }
        done = true;
    });
    const std::vector<std::string> closed(
        3, "net_communicator: its node (closed-comm/0) is closed, and no message can come");
    EXPECT_EQ(errors, closed);
}

// The same for a hybrid job: receives from the ranks of another node fail
// once this node closed; its own ranks still reach each other (they need
// no node). Making the job linked the nodes, so the receive may fail with
// the link's end (the peer's goodbye to this node's close) before the
// node says it closed: either ends it, and neither is a wait for ever.
TEST(net_communicator_port, a_hybrid_rank_whose_node_closed_fails_receives_from_other_nodes_only) {
    csp::net::nameserver ns;
    std::vector<std::string> errors;
    int local = 0;
    std::atomic<bool> done{false};
    net_test::run_nodes(ns, "closed-hybrid", 2, [&](csp::net::node& self) {
        cc::hybrid_job job(self, 2);
        if (self.rank() == 1) {
            while (!done.load()) csp::sleep_for(5ms);
            return;
        }
        self.close();
        struct mark_done {
            std::atomic<bool>& flag;
            ~mark_done() { flag = true; }  // also when the run throws: rank 1 waits for it
        } at_end{done};
        job.run([&](cc::hybrid_communicator& comm) {
            const cc::tag from_far = comm.next_tag(), here = comm.next_tag();
            if (comm.rank() == 1) {
                comm.send(0, here, 7);  // rank 1 is this node's second rank
                return;
            }
            try {
                comm.receive<int>(2, from_far);  // rank 2: node 1's first
            } catch (const csp::retired_error& e) {
                errors.push_back(e.what());
            } catch (const csp::net::peer_error& e) {
                EXPECT_EQ(e.peer(), 1) << e.what();
                errors.push_back(e.what());
            }
            local = comm.receive<int>(1, here);
        });
    });
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_TRUE(errors[0].rfind("the link to node 1 of job 'closed-hybrid' ended: this node closed", 0) == 0 ||
                errors[0] == "hybrid_job: its node (closed-hybrid/0) is closed, and no message can come")
        << errors[0];
    EXPECT_EQ(local, 7);
}

TEST(net_communicator_port, a_port_the_program_opened_cannot_be_claimed) {
    csp::run([] {
        csp::net::node self{csp::net::node_options{}};
        auto mine = self.open(77);
        const auto e = error_of([&] { cc::net_communicator comm(self, 77); });
        EXPECT_NE(e.find("the program opened it"), std::string::npos) << e;
        self.close();
    });
}

// receive_view hands a received vector's elements over where they arrived,
// and names the types when the message carried another.
TEST(net_communicator_port, receive_view_passes_a_vectors_elements_in_place_and_refuses_another_type) {
    csp::run([] {
        csp::net::node self{csp::net::node_options{}};
        {
            cc::net_communicator comm(self);
            const cc::tag t = comm.next_tag();
            comm.send(0, t, std::vector<double>{1.5, 2.5, 3.5});
            const double sum = cc::receive_view<double>(comm, 0, t, [](std::span<const double> got) {
                EXPECT_EQ(got.size(), 3u);
                double s = 0;
                for (double x : got) s += x;
                return s;
            });
            EXPECT_EQ(sum, 7.5);
            const cc::tag u = comm.next_tag();
            comm.send(0, u, std::vector<int>{1, 2});
            try {
                cc::receive_view<double>(comm, 0, u, [](std::span<const double>) {});
                ADD_FAILURE() << "a vector of int was viewed as doubles";
            } catch (const csp::net::decode_error& e) {
                EXPECT_NE(std::string(e.what()).find("cannot be received as elements of double"), std::string::npos)
                    << e.what();
            }
        }
        self.close();
    });
}

// Which values the ring allgather and the pipelined broadcast relay: a
// vector of another allocator travels as its own type, so it is received
// as itself, and bools and pointers are not plain elements.
static_assert(cc::detail::element_vector<std::vector<double>>);
static_assert(cc::detail::element_vector<std::vector<std::int64_t>>);
static_assert(!cc::detail::element_vector<std::vector<bool>>);
static_assert(!cc::detail::element_vector<std::vector<int*>>);
static_assert(!cc::detail::element_vector<std::vector<std::string>>);
static_assert(!cc::detail::element_vector<std::pmr::vector<double>>);
static_assert(!cc::detail::element_vector<double>);

// Which communicators the rings and Rabenseifner's fold in place (views
// received messages where they arrived), and what a block is sent as.
static_assert(cc::detail::views_in_place<cc::net_communicator, double>);
static_assert(cc::detail::views_in_place<cc::hybrid_communicator, double>);
static_assert(!cc::detail::views_in_place<cc::local_communicator, double>);
static_assert(cc::detail::folds_from_messages<cc::net_communicator, std::vector<double>, cc::sum>);
static_assert(!cc::detail::folds_from_messages<cc::net_communicator, std::vector<bool>, cc::logical_or>);
static_assert(!cc::detail::folds_from_messages<cc::local_communicator, std::vector<double>, cc::sum>);
static_assert(std::is_same_v<decltype(cc::detail::part_of(std::vector<double>{}, 0, 0)), std::span<const double>>);
static_assert(
    std::is_same_v<decltype(cc::detail::part_of(std::pmr::vector<double>{}, 0, 0)), std::pmr::vector<double>>);

// A block sent as a span of a vector is received as a vector of the
// same type, holding exactly elements [lo, hi).
TEST(net_communicator_port, a_part_of_a_vector_is_received_as_a_vector_of_its_elements) {
    csp::run([] {
        csp::net::node self{csp::net::node_options{}};
        {
            cc::net_communicator comm(self);
            const std::vector<double> v{1, 2, 3, 4, 5};
            const cc::tag t = comm.next_tag();
            comm.send(0, t, cc::detail::part_of(v, 1, 4));
            comm.send(0, t.step(1), cc::detail::part_of(v, 5, 5));
            EXPECT_EQ(comm.receive<std::vector<double>>(0, t), (std::vector<double>{2, 3, 4}));
            EXPECT_TRUE(comm.receive<std::vector<double>>(0, t.step(1)).empty());
        }
        self.close();
    });
}

// relay passes a vector on as it arrived and hands f its elements; a
// message of another type goes no further.
TEST(net_communicator_port, relay_passes_a_vector_on_and_refuses_another_type) {
    csp::run([] {
        csp::net::node self{csp::net::node_options{}};
        {
            cc::net_communicator comm(self);
            const cc::tag t = comm.next_tag();
            comm.send(0, t, std::vector<std::int64_t>{4, 5, 6});
            std::vector<std::int64_t> seen;
            cc::relay<std::int64_t>(comm, 0, 0, t, [&](std::span<const std::int64_t> got) {
                seen.assign(got.begin(), got.end());
            });
            EXPECT_EQ(seen, (std::vector<std::int64_t>{4, 5, 6}));
            EXPECT_EQ(comm.receive<std::vector<std::int64_t>>(0, t), (std::vector<std::int64_t>{4, 5, 6}));
            const cc::tag u = comm.next_tag();
            comm.send(0, u, std::vector<int>{1, 2});
            EXPECT_THROW(cc::relay<std::int64_t>(comm, 0, 0, u, [](std::span<const std::int64_t>) {}),
                         csp::net::decode_error);
            EXPECT_EQ(comm.unclaimed(), 0u);
        }
        self.close();
    });
}

// pass_on hands a value on as it came before decoding it, and a message of
// another type goes no further; send_to_each encodes once for every peer.
TEST(net_communicator_port, pass_on_and_send_to_each_share_one_encoding_and_refuse_another_type) {
    csp::run([] {
        csp::net::node self{csp::net::node_options{}};
        {
            cc::net_communicator comm(self);
            const std::vector<std::int64_t> v{7, 8, 9};
            const std::vector<int> twice{0, 0};
            const cc::tag t = comm.next_tag();
            cc::detail::send_to_each(comm, twice, t, v);
            EXPECT_EQ(cc::pass_on<std::vector<std::int64_t>>(comm, 0, twice, t), v);
            for (int i = 0; i < 3; ++i) EXPECT_EQ(comm.receive<std::vector<std::int64_t>>(0, t), v) << i;
            const cc::tag u = comm.next_tag();
            comm.send(0, u, std::string("not numbers"));
            EXPECT_THROW(cc::pass_on<std::vector<std::int64_t>>(comm, 0, twice, u), csp::net::decode_error);
            EXPECT_EQ(comm.unclaimed(), 0u);
        }
        self.close();
    });
}

// A program started without csp-launch runs its collectives as a job of one.
TEST(net_communicator_port, collectives_of_a_job_of_one_return_the_rank_own_values) {
    csp::run([] {
        csp::net::node self{csp::net::node_options{}};
        {
            cc::net_communicator comm(self);
            EXPECT_EQ(comm.size(), 1);
            EXPECT_EQ(cc::allreduce(comm, 2.5, cc::sum{}), 2.5);
            EXPECT_EQ(cc::broadcast(comm, 7, 0), 7);
            EXPECT_EQ(cc::allgather(comm, 3), std::vector<int>{3});
            cc::barrier(comm);
        }
        self.close();
    });
}

// Regression: a hybrid job whose claim of a later rank's port failed left the
// ports it had claimed owned for good, still feeding the half-made job's
// destroyed mailboxes.
TEST(net_communicator_port, a_hybrid_job_that_cannot_claim_every_port_releases_those_it_claimed) {
    csp::run([] {
        csp::net::node self{csp::net::node_options{}};
        auto taken = self.open(cc::hybrid_job::port_base + 1);
        const auto e = error_of([&] { cc::hybrid_job job(self, 2); });
        EXPECT_NE(e.find("open already"), std::string::npos) << e;
        {
            cc::hybrid_job job(self, 1);  // port_base + 0 again: free
            const auto sums = job.run([](cc::hybrid_communicator& c) { return cc::allreduce(c, 5, cc::sum{}); });
            EXPECT_EQ(sums, std::vector<int>{5});
        }
        self.close();
    });
}

// Regression: a message no call took (here: two ranks that each name
// itself the root of a broadcast, so each only sends) was dropped in
// silence when the communicator closed, though an answer may be wrong. The
// communicator now logs each one with its tag when it closes. A barrier on
// another stream makes sure the message is in before then (a link keeps
// its order).
TEST(net_communicator_close, messages_no_call_took_are_logged_with_their_tags) {
    std::mutex lock;
    std::vector<std::string> lines;
    auto previous = csp::net::set_log_sink([&](const std::string& line) {
        std::lock_guard lk(lock);
        lines.push_back(line);
    });
    csp::net::nameserver ns;
    double got[2]{};
    net_test::run_nodes(ns, "strays", 2, [&](csp::net::node& self) {
        cc::net_communicator comm(self);
        got[self.rank()] = cc::broadcast_binomial(comm, 10.0 + self.rank(), self.rank());
        cc::barrier(comm, cc::stream{1});
    });
    csp::net::set_log_sink(previous);
    EXPECT_EQ(got[0], 10.0);  // each rank's own value: the call's answers disagree
    EXPECT_EQ(got[1], 11.0);
    for (int r = 0; r < 2; ++r) {
        const std::string want = "csp.net strays/" + std::to_string(r) +
                                 ": closing with 1 message no collective call took: rank " + std::to_string(1 - r) +
                                 "'s message with tag (stream 0, call 0 of broadcast by binomial, step 0) (a peer made "
                                 "a call this rank did not make, or the ranks named different roots for one call or "
                                 "chose different algorithms for it)";
        EXPECT_EQ(std::count(lines.begin(), lines.end(), want), 1) << want;
    }
}

namespace {

// Every line logged while f runs.
std::vector<std::string> lines_logged_by(auto&& f) {
    std::mutex lock;
    std::vector<std::string> lines;
    auto previous = csp::net::set_log_sink([&](const std::string& line) {
        std::lock_guard lk(lock);
        lines.push_back(line);
    });
    try {
        f();
    } catch (...) {
        csp::net::set_log_sink(previous);
        throw;
    }
    csp::net::set_log_sink(previous);
    return lines;
}

std::string joined(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& l : lines) out.append(l).append("\n");
    return out;
}

bool any_line_has(const std::vector<std::string>& lines, const std::string& what) {
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.find(what) != std::string::npos; });
}


}  // namespace

// Regression: after an allreduce whose ranks passed vectors of different
// lengths (every rank threw, the stream was revoked), closing logged the
// failed call's own messages as "no collective call took ... (a peer made a
// call this rank did not make ...)", and messages (revocations, parts) that
// came after a rank had closed as "no process can receive: net_communicator
// ... was done with it before they came (... one call more than this node
// made?)": a program that caught the error and went on was told it had made
// calls it had not. Those messages are now expected leftovers: not logged,
// and the ones that come after the port was let go are dropped, credited
// and counted (node_stats::leftovers). A revocation is sent as a notice
// (node::send_notice): one to a node that closed before a link to it was up
// used to be logged as "lost node 3 ... (1 queued messages to it were not
// sent)"; a notice's loss is no fault. So nothing at all is logged.
TEST(net_communicator_close, a_failed_calls_messages_are_not_logged_as_calls_no_rank_made) {
    csp::net::nameserver ns;
    std::atomic<int> failed{0}, sums{0};
    const auto lines = lines_logged_by([&] {
        net_test::run_nodes(ns, "failed-call", 4, [&](csp::net::node& self) {
            {
                cc::net_communicator comm(self);
                try {
                    (void)cc::allreduce(comm, std::vector<double>(comm.rank() == 1 ? 3 : 4, 1.0), cc::sum{});
                } catch (const csp::usage_error& e) {
                    if (std::string(e.what()).find("different lengths") != std::string::npos) ++failed;
                }
                sums += cc::allreduce(comm, 1, cc::sum{}, cc::stream{1});
            }
            self.close();
        });
    });
    EXPECT_EQ(failed.load(), 4);
    EXPECT_EQ(sums.load(), 16);
    for (const auto& l : lines) ADD_FAILURE() << "logged: " << l;
}

// The same for a hierarchical call of a hybrid job (2 nodes x 2 fibers),
// where a failure is passed on to every level: each rank's revocations
// reach ranks that have closed already.
TEST(net_communicator_close, a_failed_hierarchical_calls_messages_are_not_logged_as_calls_no_rank_made) {
    csp::net::nameserver ns;
    std::atomic<int> failed{0}, sums{0};
    const auto lines = lines_logged_by([&] {
        net_test::run_nodes(ns, "failed-hybrid-call", 2, [&](csp::net::node& self) {
            {
                cc::hybrid_job job(self, 2);
                job.run([&](cc::hybrid_communicator& c) {
                    cc::hierarchy h(c, "node" + std::to_string(c.node()));
                    try {
                        (void)cc::hierarchical::allreduce(h, std::vector<double>(c.rank() == 3 ? 3 : 4, 1.0),
                                                          cc::sum{});
                    } catch (const csp::usage_error& e) {
                        if (std::string(e.what()).find("different lengths") != std::string::npos) ++failed;
                    }
                    sums += cc::allreduce(c, 1, cc::sum{}, cc::stream{1});
                });
            }
            self.close();
        });
    });
    EXPECT_EQ(failed.load(), 4);
    EXPECT_EQ(sums.load(), 16);
    for (const auto& l : lines) ADD_FAILURE() << "logged: " << l;
}

// Regression: a hybrid job dropped in silence the messages no call of its
// ranks took (a net_communicator names them as it closes): two ranks that
// each name itself the root of a broadcast got different answers, and
// nothing said so. Each is now logged with its tag when the job ends.
TEST(net_communicator_close, a_hybrid_jobs_messages_no_call_took_are_logged_with_their_tags) {
    csp::net::nameserver ns;
    double got[2]{};
    const auto lines = lines_logged_by([&] {
        net_test::run_nodes(ns, "hybrid-strays", 2, [&](csp::net::node& self) {
            {
                cc::hybrid_job job(self, 1);
                job.run([&](cc::hybrid_communicator& c) {
                    got[c.rank()] = cc::broadcast_binomial(c, 10.0 + c.rank(), c.rank());
                    cc::barrier(c, cc::stream{1});  // a link keeps its order: the stray is in
                });
            }
            self.close();
        });
    });
    EXPECT_EQ(got[0], 10.0);
    EXPECT_EQ(got[1], 11.0);
    for (int r = 0; r < 2; ++r) {
        const std::string want = "csp.net hybrid-strays/" + std::to_string(r) + ": rank " + std::to_string(r) +
                                 " of a hybrid job: closing with 1 message no collective call took: rank " +
                                 std::to_string(1 - r) +
                                 "'s message with tag (stream 0, call 0 of broadcast by binomial, step 0)";
        EXPECT_TRUE(any_line_has(lines, want)) << want << "\nlogged:\n" << joined(lines);
    }
}
