// The job-wide deadlock detector (net/deadlock_waves.hpp): nodes that wait
// for each other for good are told so, with a report naming every blocked
// process of every node; nodes that are merely slow are not.
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <thread>
#include <vector>
#include <string>

#include "csp/alt.hpp"
#include "csp/process_group.hpp"
#include "net/deadlock_answers.hpp"
#include "net/deadlock_waves.hpp"
#include "net/nameserver_registry.hpp"
#include "net_fixture.hpp"

using namespace std::chrono_literals;
using net_test::run_nodes;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t c = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++c;
    return c;
}

// The report of the deadlock that ends a receive on `in`, which must come
// within seconds ("" if the receive returned instead).
std::string report_ending_a_receive(csp::net::port& in, int rank) {
    const auto start = csp::clock::now();
    std::string report;
    try {
        in.receive<int>();
        ADD_FAILURE() << "rank " << rank << " received";
    } catch (const csp::deadlock_error& e) {
        report = e.what();
    }
    EXPECT_LT(csp::clock::now() - start, 10s);
    return report;
}

// A relay between nodes and a nameserver that passes everything except the
// job's deadlock report, which it holds from the report's first line on
// until release(): a node behind it hears the report late, as a node whose
// nameserver connection is slow does.
class report_holding_relay {
public:
    explicit report_holding_relay(const csp::net::endpoint& nameserver)
        : to_(nameserver), listener_(csp::net::listen_on({"127.0.0.1", 0}, address_)) {
        acceptor_ = std::thread([this] { accept_loop(); });
    }
    ~report_holding_relay() {
        stop_ = true;
        acceptor_.join();
        for (auto& t : pumps_) t.join();
    }
    csp::net::endpoint address() const { return address_; }
    void release() { released_ = true; }
    // Whether a report came from the nameserver and is (or was) held.
    bool held_a_report() const { return held_; }

private:
    void accept_loop() {
        while (!stop_) {
            pollfd p{listener_.get(), POLLIN, 0};
            if (::poll(&p, 1, 10) <= 0) continue;
            const int client = csp::net::accept_from(listener_.get()).release();
            if (client < 0) continue;
            const int server = net_test::connect_plain(to_);
            if (server < 0) {
                ::close(client);
                continue;
            }
            pumps_.emplace_back([this, client, server] { pump(client, server); });
        }
    }

    // Until either side ends (or the relay stops): the client's bytes to the
    // nameserver at once; the nameserver's to the client up to a report
    // while it is held.
    void pump(int client, int server) {
        std::string down;  // from the nameserver, not yet passed on
        bool open = true;
        while (!stop_ && open) {
            pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
            ::poll(p, 2, 10);
            char buf[4096];
            if (p[0].revents) {
                const ssize_t n = ::read(client, buf, sizeof buf);
                if (n <= 0) open = false;
                else ::send(server, buf, static_cast<std::size_t>(n), MSG_NOSIGNAL);
            }
            if (p[1].revents) {
                const ssize_t n = ::read(server, buf, sizeof buf);
                if (n <= 0) open = false;
                else down.append(buf, static_cast<std::size_t>(n));
            }
            std::size_t pass = down.size();
            if (!released_) {
                // Whole lines (the protocol's), up to the report's first.
                const auto end = down.rfind('\n');
                pass = end == std::string::npos ? 0 : end + 1;
                for (std::size_t line = 0; line < pass; line = down.find('\n', line) + 1)
                    if (down.compare(line, 9, "DEADLOCK ") == 0) {
                        held_ = true;
                        pass = line;
                    }
            }
            if (pass > 0) {
                ::send(client, down.data(), pass, MSG_NOSIGNAL);
                down.erase(0, pass);
            }
        }
        ::close(client);
        ::close(server);
    }

    csp::net::endpoint to_, address_;
    csp::net::unique_fd listener_;
    std::atomic<bool> stop_{false}, released_{false}, held_{false};
    std::thread acceptor_;
    std::vector<std::thread> pumps_;  // made and joined by the acceptor's owner only after it stopped
};

// Regression: two nodes each waiting to receive from the other hung for ever,
// silently.
TEST(net_deadlock, two_nodes_receiving_from_each_other_fail_with_a_report_naming_both) {
    csp::net::nameserver ns;
    std::atomic<int> failed{0};
    std::string reports[2];
    run_nodes(ns, "crossed", 2, [&](csp::net::node& self) {
        auto in = self.open(5);
        reports[self.rank()] = report_ending_a_receive(in, self.rank());
        if (!reports[self.rank()].empty()) ++failed;
    });
    EXPECT_EQ(failed.load(), 2);
    for (const auto& r : reports) {
        EXPECT_NE(r.find("deadlock in job 'crossed'"), std::string::npos) << r;
        EXPECT_NE(r.find("node 0: process 'main' is blocked reading from channel 'port 5 of node 0'"),
                  std::string::npos)
            << r;
        EXPECT_NE(r.find("node 1: process 'main' is blocked reading from channel 'port 5 of node 1'"),
                  std::string::npos)
            << r;
    }
    const auto found = ns.deadlocks();
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0], reports[0]);
}

// Regression: nodes waiting for each other after another node had finished
// hung for ever (the detector probed only jobs none of whose nodes had
// ended), as in a collective whose ranks disagree on the root. Here node 2
// sends to node 0 and finishes; then nodes 0 and 1 each wait for the other.
TEST(net_deadlock, nodes_waiting_for_each_other_after_one_finished_fail_with_a_report_naming_it) {
    csp::net::nameserver ns;
    std::string reports[2];
    int received = 0;
    run_nodes(ns, "left", 3, [&](csp::net::node& self) {
        auto in = self.open(5);
        if (self.rank() == 2) {
            self.send(0, 5, 7);
            return;
        }
        if (self.rank() == 0) received = in.receive<int>();
        reports[self.rank()] = report_ending_a_receive(in, self.rank());
    });
    EXPECT_EQ(received, 7);
    for (const auto& r : reports) {
        EXPECT_NE(r.find("deadlock in job 'left': every process of its 2 remaining nodes is blocked and no message "
                         "is in flight (node 2 has finished)"),
                  std::string::npos)
            << r;
        EXPECT_NE(r.find("node 0: process 'main' is blocked reading from channel 'port 5 of node 0'"),
                  std::string::npos)
            << r;
        EXPECT_NE(r.find("node 1: process 'main' is blocked reading from channel 'port 5 of node 1'"),
                  std::string::npos)
            << r;
        EXPECT_EQ(count(r, "' is blocked"), 2u) << r;
    }
    EXPECT_EQ(ns.deadlocks().size(), 1u);
}

// Node 0 gets the report, node 1 hears the nameserver through a relay that
// holds it until node 0 has left: node 1 must fail with the report that came
// in node 0's goodbye. Each node has `waiters` more processes blocked on
// channels with long names, which make the report that much longer.
void overtaken_report(const std::string& job, int waiters) {
    csp::net::nameserver ns;
    report_holding_relay relay(ns.address());
    std::string reports[2];
    std::atomic<int> failed_waiters{0};
    std::atomic<bool> zero_left{false};
    run_nodes(ns, job, 2, [&](csp::net::node& self) {
        auto in = self.open(5);
        // A message each way first: the link is up when the deadlock comes.
        self.send(1 - self.rank(), 5, self.rank());
        EXPECT_EQ(in.receive<int>(), 1 - self.rank());
        std::vector<csp::channel<int>> never;
        for (int i = 0; i < waiters; ++i)
            never.emplace_back("a channel nobody writes, number " + std::to_string(i) + " of node " +
                               std::to_string(self.rank()) + std::string(150, '.'));
        csp::par(csp::proc("receiver", [&] { reports[self.rank()] = report_ending_a_receive(in, self.rank()); }),
                 csp::proc("waiters", [&] {
                     csp::par_for(never.size(), [&](std::size_t i) {
                         try {
                             never[i].reader().read();
                         } catch (const csp::deadlock_error&) {
                             ++failed_waiters;
                         }
                     });
                 }));
        if (self.rank() == 0) {
            self.close();
            zero_left = true;
        }
    }, 1, [&](int rank, csp::net::node_options& o) {
        if (rank == 1) o.nameserver = relay.address();
    });
    EXPECT_TRUE(zero_left.load());
    EXPECT_TRUE(relay.held_a_report());
    relay.release();
    EXPECT_EQ(failed_waiters.load(), 2 * waiters);
    const auto found = ns.deadlocks();
    ASSERT_EQ(found.size(), 1u);
    if (waiters > 0) {
        EXPECT_GT(found[0].size(), 16u * 1024);
    }
    // Each node fails with its part of the whole report (the count of the
    // other node's lines would differ had a goodbye brought less of it).
    for (int rank = 0; rank < 2; ++rank) {
        EXPECT_EQ(reports[rank], csp::net::detail::report_for_node(found[0], rank));
        EXPECT_NE(reports[rank].find("deadlock in job '" + job + "'"), std::string::npos) << reports[rank];
    }
}

// Regression: a node could fail with a peer's departure instead of the job's
// deadlock report. The peer got the report first, ended, and its goodbye
// overtook the nameserver's copy of the report (they come over different
// connections); the receive waiting on that peer ended with "node 0 has
// left". The goodbye carries the report now, and the report comes first.
TEST(net_deadlock, a_peer_that_left_after_the_report_gives_it_to_a_node_the_nameserver_has_not_told_yet) {
    overtaken_report("overtaken", 0);
}

// The same with a report of about 24 KiB, which a UCX link may send by
// rendezvous rather than inline (frame.hpp: a goodbye carries up to 64 KiB).
TEST(net_deadlock, a_long_report_comes_whole_in_a_goodbye) {
    overtaken_report("overtaken_long", 40);
}

// A node that finishes while its peers still talk is not a deadlock: the
// others' conversation goes on over several waves, with pauses.
TEST(net_deadlock, a_finished_node_leaves_the_others_free_to_pause) {
    csp::net::nameserver ns;
    int sum = 0;
    run_nodes(ns, "one_left", 3, [&](csp::net::node& self) {
        auto in = self.open(1);
        if (self.rank() == 2) return;
        const int other = 1 - self.rank();
        for (int i = 0; i < 4; ++i) {
            if (self.rank() == 0) {
                self.send(other, 1, i);
                sum += in.receive<int>();
            } else {
                const int v = in.receive<int>();
                csp::sleep_for(300ms);  // quiet, with a timer to end it
                self.send(other, 1, v * 10);
            }
        }
    });
    EXPECT_EQ(sum, 60);
    EXPECT_TRUE(ns.deadlocks().empty());
}

namespace {

// Each of `nodes` nodes of `job` blocks three processes for good: a reader
// of its port 9, a reader of a local channel, and its main, in their par.
// Returns the deadlock_error each node's readers failed with (by rank) and
// how many readers failed with one.
std::pair<std::vector<std::string>, int> blocked_three_ways(csp::net::nameserver& ns, const std::string& job,
                                                            int nodes) {
    std::vector<std::string> seen(static_cast<std::size_t>(nodes));
    std::atomic<int> failed{0};
    run_nodes(ns, job, nodes, [&](csp::net::node& self) {
        csp::channel<int> local{"local " + std::to_string(self.rank())};
        auto in = self.open(9);
        auto expect_deadlock = [&](auto&& wait) {
            try {
                wait();
            } catch (const csp::deadlock_error& e) {
                seen[static_cast<std::size_t>(self.rank())] = e.what();
                ++failed;
            }
        };
        csp::par(csp::proc("port reader", [&] { expect_deadlock([&] { in.receive(); }); }),
                 csp::proc("local reader", [&] { expect_deadlock([&] { local.reader().read(); }); }));
    });
    return {seen, failed.load()};
}

}  // namespace

// Every process of every node is named: several per node, some waiting on
// local channels, one on a collective-like port.
TEST(net_deadlock, the_report_names_every_blocked_process_of_every_node) {
    csp::net::nameserver ns;
    const auto [seen, failed] = blocked_three_ways(ns, "many", 3);
    const std::string& report = seen[0];
    EXPECT_EQ(failed, 6);
    for (int r = 0; r < 3; ++r) {
        const std::string node = "node " + std::to_string(r) + ": ";
        EXPECT_NE(report.find(node + "process 'port reader' is blocked reading from channel 'port 9 of node " +
                              std::to_string(r) + "'"),
                  std::string::npos)
            << report;
        EXPECT_NE(report.find(node + "process 'local reader' is blocked reading from channel 'local " +
                              std::to_string(r) + "'"),
                  std::string::npos)
            << report;
    }
    EXPECT_EQ(count(report, "' is blocked"), 9u) << report;  // and each node's main, in its par
}

// A large job's report is printed whole once (by csp-launch, or the
// nameserver that found it); each node fails with its own part: 7 nodes of
// 3 blocked processes each give node 4 the head, its 3 lines and a count
// of the other 18, where each node used to get all 21 lines, so a program
// printing its error at every node printed the report once per node.
TEST(net_deadlock, each_node_of_a_large_job_fails_with_its_own_part_of_the_report) {
    csp::net::nameserver ns;
    const auto [seen, failed] = blocked_three_ways(ns, "large", 7);
    EXPECT_EQ(failed, 14);
    const auto found = ns.deadlocks();
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(count(found[0], "' is blocked"), 21u) << found[0];
    for (int r = 0; r < 7; ++r) {
        const std::string& mine = seen[static_cast<std::size_t>(r)];
        EXPECT_EQ(mine.rfind("deadlock in job 'large': every process of its 7 nodes is blocked", 0), 0u) << mine;
        EXPECT_EQ(count(mine, "\n  node " + std::to_string(r) + ": process '"), 3u) << mine;
        EXPECT_EQ(count(mine, "' is blocked"), 3u) << mine;
        EXPECT_NE(mine.find("\n  and 18 lines about 6 other nodes, left out here: csp-launch, or the job's "
                            "csp-nameserver, prints the whole report"),
                  std::string::npos)
            << mine;
    }
}

TEST(net_deadlock_report, a_node_keeps_a_small_report_whole_and_its_own_lines_of_a_large_one) {
    using csp::net::detail::report_for_node;
    const std::string small = "deadlock in job 'j': ...\n  node 0: a\n  node 1: b\n  node 1: c";
    EXPECT_EQ(report_for_node(small, 1), small);
    EXPECT_EQ(report_for_node(small, 1, 1), small);  // one other line: kept
    EXPECT_EQ(report_for_node(small, 0, 1),
              "deadlock in job 'j': ...\n  node 0: a\n  and 2 lines about 1 other node, left out here: csp-launch, "
              "or the job's csp-nameserver, prints the whole report");
    // node 1 is not node 10's prefix; a node with no line of its own keeps the head and the count.
    const std::string tens = "head\n  node 10: x\n  node 1: y\n  node 10: z";
    EXPECT_EQ(report_for_node(tens, 10, 0), "head\n  node 10: x\n  node 10: z\n  and 1 line about 1 other node, "
                                            "left out here: csp-launch, or the job's csp-nameserver, prints the whole "
                                            "report");
    EXPECT_EQ(report_for_node(tens, 2, 0), "head\n  and 3 lines about 2 other nodes, left out here: csp-launch, or the "
                                           "job's csp-nameserver, prints the whole report");
    EXPECT_EQ(report_for_node("head", 0, 0), "head");
}

// A node that computes for a while (longer than several waves) before it
// answers is not a deadlock, nor is a conversation with pauses in it.
TEST(net_deadlock, slow_nodes_and_quiet_pauses_are_not_a_deadlock) {
    csp::net::nameserver ns;
    run_nodes(ns, "slow", 2, [&](csp::net::node& self) {
        auto in = self.open(1);
        if (self.rank() == 0) {
            EXPECT_EQ(in.receive<int>(), 42);  // waits ~2 s for it, blocked
            for (int i = 0; i < 6; ++i) {
                self.send(1, 1, i);
                EXPECT_EQ(in.receive<int>(), i);
            }
        } else {
            const auto until = csp::clock::now() + 2s;
            volatile double x = 0;
            while (csp::clock::now() < until) {  // busy, on the only thread
                for (int k = 0; k < 1000; ++k) x = x + 1;
                csp::yield();
            }
            self.send(0, 1, 42);
            for (int i = 0; i < 6; ++i) {
                const int v = in.receive<int>();
                csp::sleep_for(300ms);  // a pause: the timer will end it
                self.send(0, 1, v);
            }
        }
    });
    EXPECT_TRUE(ns.deadlocks().empty());
}

// The bookkeeping alone: two equal quiet waves with balanced counts, and
// every way one of those conditions can fail.
TEST(net_deadlock_waves, two_equal_quiet_balanced_waves_and_nothing_less_make_a_deadlock) {
    using w = csp::net::detail::deadlock_waves;
    auto run = [](std::vector<w::sample> first, std::vector<w::sample> second) {
        w waves;
        std::vector<int> ranks{0, 1};
        for (auto* samples : {&first, &second}) {
            const auto wave = waves.start(ranks);
            w::verdict v = w::verdict::pending;
            for (int r = 0; r < 2; ++r) v = waves.answer(wave, r, (*samples)[static_cast<std::size_t>(r)]);
            if (samples == &second) return v;
        }
        return w::verdict::pending;
    };
    const w::sample a{true, 5, 3, 10}, b{true, 3, 5, 7};
    EXPECT_EQ(run({a, b}, {a, b}), w::verdict::describe);
    EXPECT_EQ(run({a, b}, {a, {true, 3, 5, 8}}), w::verdict::busy);     // node 1 ran in between
    EXPECT_EQ(run({a, b}, {{true, 6, 3, 10}, b}), w::verdict::busy);    // node 0 sent in between
    EXPECT_EQ(run({a, {true, 3, 4, 7}}, {a, {true, 3, 4, 7}}), w::verdict::busy);  // one message in flight
    EXPECT_EQ(run({a, b}, {a, {false, 3, 5, 7}}), w::verdict::busy);    // node 1 busy
    EXPECT_EQ(run({{false, 5, 3, 10}, b}, {a, b}), w::verdict::busy);   // only one quiet wave so far

    // A node that moved by the time it describes itself calls it off.
    w waves;
    for (int k = 0; k < 2; ++k) {
        const auto wave = waves.start({0, 1});
        waves.answer(wave, 0, a);
        waves.answer(wave, 1, b);
    }
    EXPECT_FALSE(waves.described(2, 0, true, 10).has_value());
    EXPECT_FALSE(waves.described(2, 1, true, 8).has_value());
    EXPECT_FALSE(waves.reported());
}

}  // namespace

// Which jobs the registry probes once nodes have ended: every rank still
// registered or gone with its final counts (added to the sums); a rank that
// died (no FINAL) stops the probes, and one that registers again counts as
// running.
TEST(net_deadlock_waves, a_job_is_probed_over_the_nodes_left_only_when_each_one_gone_left_its_counts) {
    using namespace csp::net::detail;
    registry reg;
    std::map<int, std::vector<std::string>> heard;
    const int owners[3]{};
    auto join = [&](int rank) {
        std::vector<std::pair<std::string, int>> mine;
        const auto answer = reg.add({"REGISTER", "j", std::to_string(rank), "3", "127.0.0.1", "1000"}, &owners[rank],
                                    [&heard, rank](const std::string& line) { heard[rank].push_back(line); }, mine);
        EXPECT_EQ(answer.rfind("OK ", 0), 0u) << answer;
        return mine;
    };
    auto probes = [&] {  // the ranks probed now
        heard.clear();
        tell_list tell;
        reg.probe(tell);
        for (auto& [sink, line] : tell) sink(line);
        std::set<int> told;
        for (const auto& [r, lines] : heard)
            for (const auto& line : lines)
                if (line.rfind("PROBE ", 0) == 0) {
                    told.insert(r);
                    reg.quiet("j", r, std::stoull(line.substr(6)), {false, 0, 0, 0}, tell);  // busy: the wave ends
                }
        return told;
    };
    auto m0 = join(0), m1 = join(1), m2 = join(2);
    EXPECT_EQ(probes(), (std::set<int>{0, 1, 2}));
    reg.final_counts("j", 2, {7, 4});
    reg.remove(m2, &owners[2]);
    EXPECT_EQ(probes(), (std::set<int>{0, 1}));
    reg.remove(m1, &owners[1]);  // died: no FINAL
    EXPECT_TRUE(probes().empty());
    m1 = join(1);
    EXPECT_EQ(probes(), (std::set<int>{0, 1}));
    (void)m0;
}

// The finished nodes' counts join the sums: what they sent and no one has
// received yet is a message in flight.
TEST(net_deadlock_waves, a_finished_nodes_counts_are_part_of_the_balance) {
    using w = csp::net::detail::deadlock_waves;
    auto verdict = [](csp::net::detail::settled_traffic done) {
        w waves;
        w::verdict v = w::verdict::pending;
        for (int k = 0; k < 2; ++k) v = waves.answer(waves.start({0}, done), 0, {true, 3, 5, 1});
        return v;
    };
    EXPECT_EQ(verdict({2, 0}), w::verdict::describe);  // node 0 received the finished node's 2
    EXPECT_EQ(verdict({3, 0}), w::verdict::busy);      // one of its 3 is on its way
    EXPECT_EQ(verdict({}), w::verdict::busy);
}

// The STATUS question's bookkeeping: asked of every node, incomplete until
// each answered, answers in rank order, a late answer to an older question
// ignored.
TEST(net_status, every_node_is_asked_and_its_answers_come_back_in_rank_order) {
    csp::net::detail::registry reg;
    std::vector<std::pair<std::string, int>> mine;
    std::map<int, std::vector<std::string>> heard;
    for (int r = 0; r < 2; ++r) {
        const std::vector<std::string> w = {"REGISTER", "j", std::to_string(r), "2", "127.0.0.1", "1"};
        ASSERT_EQ(reg.add(w, &heard, [&heard, r](const std::string& l) { heard[r].push_back(l); }, mine).rfind("OK", 0),
                  0u);
    }
    csp::net::detail::tell_list tell;
    EXPECT_FALSE(reg.ask_status("nobody", tell));
    ASSERT_TRUE(reg.ask_status("j", tell));
    ASSERT_TRUE(reg.ask_status("j", tell));  // a second question: id 2
    for (auto& [sink, line] : tell) sink(line);
    EXPECT_EQ(heard[0], (std::vector<std::string>{"STATUS 1", "STATUS 2"}));
    EXPECT_EQ(heard[1], (std::vector<std::string>{"STATUS 1", "STATUS 2"}));

    bool complete = true;
    reg.state("j", 1, 1, "stale answer to question 1");
    reg.stated("j", 1, 1);
    reg.state("j", 1, 2, "process 'b' is blocked");
    reg.stated("j", 1, 2);
    EXPECT_EQ(reg.status("j", complete),
              (std::vector<std::string>{"node 0: no answer (no process of it yields to let the node answer)",
                                        "node 1: process 'b' is blocked"}));
    EXPECT_FALSE(complete);
    reg.state("j", 0, 2, "process 'a' is ready to run");
    reg.state("j", 0, 2, "process 'c' is blocked");
    reg.stated("j", 0, 2);
    reg.state("j", 0, 2, "after it said it was done");
    EXPECT_EQ(reg.status("j", complete),
              (std::vector<std::string>{"node 0: process 'a' is ready to run", "node 0: process 'c' is blocked",
                                        "node 1: process 'b' is blocked"}));
    EXPECT_TRUE(complete);
}

namespace {

// Regression: a patience of milliseconds::max() (no limit) overflowed into
// a deadline in the past, and status() gave up at once with no line at
// all. It waits for the answers now.
TEST(net_status, a_patience_of_the_largest_duration_waits_for_every_answer) {
    csp::net::nameserver ns;
    std::atomic<int> registered{0};
    std::atomic<bool> done{false};
    std::vector<std::string> lines;
    std::thread asker([&] {
        while (registered.load() < 2) std::this_thread::sleep_for(1ms);
        lines = ns.status("asked", std::chrono::milliseconds::max());
        done = true;
    });
    run_nodes(ns, "asked", 2, [&](csp::net::node&) {
        ++registered;
        while (!done.load()) csp::sleep_for(2ms);
    });
    asker.join();
    ASSERT_GE(lines.size(), 2u);
    EXPECT_EQ(lines.front().rfind("node 0: ", 0), 0u) << lines.front();
    EXPECT_EQ(lines.back().rfind("node 1: ", 0), 0u) << lines.back();
    for (const auto& l : lines) EXPECT_EQ(l.find("no answer"), std::string::npos) << l;
}

}  // namespace
