// The nameserver: ranks within named jobs, several jobs at once, nodes that
// come and go concurrently, and no stale entries once a node has left.
#include <algorithm>
#include <barrier>
#include <set>
#include <thread>

#include "net_fixture.hpp"

namespace {

using namespace std::chrono_literals;
using csp::net::endpoint;

csp::clock::time_point soon() { return csp::clock::now() + 5s; }

// Regression: the refused connect's error was read (and cleared) by the IO
// wait, so the registration wrote to a dead socket and a node without its
// nameserver died of an uncaught "Broken pipe".
TEST(net_nameserver, a_missing_nameserver_is_a_catchable_error_that_says_what_to_do) {
    // A port nobody listens on: bound, then closed.
    csp::net::endpoint nowhere;
    {
        csp::run([&] { auto l = csp::net::listen_on({"127.0.0.1", 0}, nowhere); });
    }
    csp::run([&] {
        csp::net::node_options o;
        o.nameserver = nowhere;
        o.job = "orphan";
        try {
            csp::net::node n(o);
            ADD_FAILURE() << "a node registered with no nameserver";
        } catch (const csp::net::nameserver_error& e) {
            EXPECT_EQ(std::string(e.what()), "cannot reach the nameserver at " + nowhere.str() +
                                                 " (connection refused); start csp-nameserver or run under csp-launch");
        }
    });
}

TEST(net_nameserver, two_jobs_have_separate_ranks) {
    csp::net::nameserver ns;
    csp::run([&] {
        auto a0 = csp::net::register_node(ns.address(), "job-a", 0, 2, {"127.0.0.1", 1000}, soon());
        auto b0 = csp::net::register_node(ns.address(), "job-b", 0, 3, {"127.0.0.1", 2000}, soon());
        auto a1 = csp::net::register_node(ns.address(), "job-a", -1, 0, {"127.0.0.1", 1001}, soon());
        EXPECT_EQ(a1.rank, 1);
        EXPECT_EQ(a1.size, 2);  // the job's size, set by its first node
        EXPECT_EQ(b0.size, 3);
        EXPECT_EQ(csp::net::lookup(ns.address(), "job-a", 1, soon()).port, 1001);
        EXPECT_EQ(csp::net::lookup(ns.address(), "job-b", 0, soon()).port, 2000);
        const auto a = csp::net::list_job(ns.address(), "job-a", soon());
        EXPECT_EQ(a.size, 2);
        EXPECT_EQ(a.nodes.size(), 2u);
        EXPECT_EQ(csp::net::list_job(ns.address(), "job-b", soon()).nodes.size(), 1u);
    });
}

TEST(net_nameserver, refusals_name_the_job_and_rank) {
    csp::net::nameserver ns;
    csp::run([&] {
        auto a0 = csp::net::register_node(ns.address(), "job", 0, 2, {"127.0.0.1", 1000}, soon());
        auto expect_refusal = [&](int rank, int size, const std::string& text) {
            try {
                csp::net::register_node(ns.address(), "job", rank, size, {"127.0.0.1", 1}, soon());
                ADD_FAILURE() << "registered rank " << rank;
            } catch (const csp::net::nameserver_error& e) {
                EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
            }
        };
        expect_refusal(0, 2, "rank 0 of job 'job' is already registered at 127.0.0.1:1000");
        expect_refusal(2, 0, "rank 2 is out of range for job 'job' of 2 nodes");
        expect_refusal(1, 5, "job 'job' has 2 nodes, not 5");
        auto a1 = csp::net::register_node(ns.address(), "job", -1, 0, {"127.0.0.1", 1001}, soon());
        expect_refusal(-1, 0, "job 'job' is full");
        try {
            csp::net::lookup(ns.address(), "other", 0, csp::clock::now() + 50ms);
            ADD_FAILURE();
        } catch (const csp::net::nameserver_error& e) {
            EXPECT_NE(std::string(e.what()).find("rank 0 of job 'other' is not registered"), std::string::npos) << e.what();
        }
    });
}

TEST(net_nameserver, nodes_joining_and_leaving_concurrently_leave_no_stale_entries) {
    csp::net::nameserver ns;
    constexpr int n = 16;
    std::vector<int> ranks(n, -1);
    std::vector<std::thread> ts;
    std::barrier registered(n + 1), looked(n + 1);
    for (int i = 0; i < n; ++i)
        ts.emplace_back([&, i] {
            csp::run([&] {
                auto r = csp::net::register_node(ns.address(), "churn", -1, n,
                                                 {"127.0.0.1", static_cast<std::uint16_t>(3000 + i)}, soon());
                ranks[static_cast<std::size_t>(i)] = r.rank;
                registered.arrive_and_wait();
                looked.arrive_and_wait();
                if (i % 2 == 0) r.connection.reset();  // even threads leave now...
                else csp::select(csp::timeout(50ms));  // ...odd ones a little later
            });
        });
    registered.arrive_and_wait();
    std::set<int> seen(ranks.begin(), ranks.end());
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(n));
    EXPECT_EQ(*seen.begin(), 0);
    EXPECT_EQ(*seen.rbegin(), n - 1);
    csp::run([&] { EXPECT_EQ(csp::net::list_job(ns.address(), "churn", soon()).nodes.size(), static_cast<std::size_t>(n)); });
    looked.arrive_and_wait();
    for (auto& t : ts) t.join();
    csp::run([&] {
        const auto after = csp::net::list_job(ns.address(), "churn", soon());
        EXPECT_TRUE(after.nodes.empty()) << after.nodes.size() << " stale entries";
        EXPECT_EQ(after.size, 0);  // the job is gone with its last node
        EXPECT_THROW(csp::net::lookup(ns.address(), "churn", 3, csp::clock::now() + 20ms), csp::net::nameserver_error);
        // The job can start again from scratch.
        auto again = csp::net::register_node(ns.address(), "churn", -1, 2, {"127.0.0.1", 4000}, soon());
        EXPECT_EQ(again.rank, 0);
        EXPECT_EQ(again.size, 2);
    });
}

TEST(net_nameserver, a_closed_node_is_gone_from_its_job_and_a_lookup_waits_for_a_late_one) {
    csp::net::nameserver ns;
    csp::run([&] {
        {
            csp::net::node n(net_test::options_for(ns, "late", 0, 2));
            EXPECT_EQ(csp::net::list_job(ns.address(), "late", soon()).nodes.size(), 1u);
        }
        EXPECT_TRUE(csp::net::list_job(ns.address(), "late", soon()).nodes.empty());
        endpoint found;
        csp::par([&] { found = csp::net::lookup(ns.address(), "late", 1, soon()); },
                 [&] {
                     csp::select(csp::timeout(30ms));
                     auto r = csp::net::register_node(ns.address(), "late", 1, 2, {"127.0.0.1", 5555}, soon());
                     csp::select(csp::timeout(100ms));  // stay registered while the lookup answers
                 });
        EXPECT_EQ(found.port, 5555);
    });
}

}  // namespace
