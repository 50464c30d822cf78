// The table's two-level algorithms (collectives/two_levels.hpp) on hybrid
// jobs: a plain call folds each node's ranks first and gives what the flat
// algorithms give; where the levels cannot serve, the flat ones run.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/collectives.hpp"
#include "collectives/hybrid_communicator.hpp"
#include "collectives/trace.hpp"
#include "csp/runtime.hpp"
#include "net/net.hpp"
#include "test/net/net_fixture.hpp"

namespace cc = csp::collectives;

namespace {

// Runs body(comm) as every rank of a hybrid job whose node k holds
// fibers[k] ranks, each node a runtime on a thread of its own.
void hybrid_ranks(const std::string& job, const std::vector<int>& fibers,
                  const std::function<void(cc::hybrid_communicator&)>& body) {
    csp::net::nameserver ns;
    net_test::run_nodes(ns, job, static_cast<int>(fibers.size()), [&](csp::net::node& self) {
        {
            cc::hybrid_job j(self, fibers[static_cast<std::size_t>(self.rank())]);
            j.run([&](cc::hybrid_communicator& c) { body(c); });
        }
        self.close();
    });
}

std::string table_choice(const cc::hybrid_communicator& c, const char* collective, std::size_t bytes) {
    const auto request = cc::detail::request_of(c, collective, cc::stream{}, bytes, true, true);
    return std::string(cc::selection::global().choose(request));
}

}  // namespace

// The call draws no tag of the whole communicator's stream (its steps are
// the levels' own), which is how a rank can tell which way it went.
TEST(two_levels, a_hybrid_jobs_plain_allreduce_and_barrier_run_on_its_levels_and_agree_with_the_flat_ones) {
    hybrid_ranks("levels", {2, 3}, [](cc::hybrid_communicator& c) {
        ASSERT_NE(c.two_levels(), nullptr);
        EXPECT_EQ(table_choice(c, "allreduce", 8), "two_levels");
        EXPECT_EQ(table_choice(c, "barrier", 0), "two_levels");
        EXPECT_EQ(cc::allreduce(c, c.rank() + 1, cc::sum{}), 15);
        cc::barrier(c);
        const std::vector<double> v(8192, 0.5 + c.rank());  // 64 KiB
        const auto total = cc::allreduce(c, v, cc::sum{});
        EXPECT_EQ(total, std::vector<double>(8192, 0.5 * 5 + 10));
        // An op that does not commute: still in rank order.
        const auto order = cc::allreduce(c, std::to_string(c.rank()),
                                         cc::ordered([](std::string a, std::string b) { return a + b; }));
        EXPECT_EQ(order, "01234");
        EXPECT_EQ(c.upcoming_tag(cc::stream{}).sequence(), 0u) << "a call ran flat at rank " << c.rank();
        // Traced, the same: the trace names the algorithm (its steps are the
        // levels' messages, which the trace does not see).
        cc::trace_log log;
        cc::traced tc(c, log);
        EXPECT_EQ(cc::allreduce(tc, 1, cc::sum{}), 5);
        EXPECT_EQ(log.algorithms(), std::vector<std::string>{"allreduce two_levels"});
        // The flat algorithm by name, for comparison: the same answer.
        EXPECT_EQ(cc::allreduce_butterfly(c, c.rank() + 1, cc::sum{}), 15);
        EXPECT_EQ(c.upcoming_tag(cc::stream{}).sequence(), 1u);
    });
}

// Reduce (64 KiB to 1 MiB), gather (every size) and allgather (below
// 64 KiB) run on the levels too, for every root, and give what the flat
// algorithms give, in rank order; outside those sizes they run flat.
TEST(two_levels, a_hybrid_jobs_plain_reduce_gather_and_allgather_run_on_its_levels_for_every_root) {
    hybrid_ranks("levels-rooted", {2, 3}, [](cc::hybrid_communicator& c) {
        const int n = c.size(), me = c.rank();
        EXPECT_EQ(table_choice(c, "reduce", 8), "arrival");
        EXPECT_EQ(table_choice(c, "reduce", 65536), "two_levels");
        EXPECT_EQ(table_choice(c, "reduce", 1 << 20), "pipeline");
        EXPECT_EQ(table_choice(c, "gather", 0), "two_levels");
        EXPECT_EQ(table_choice(c, "allgather", 1024), "two_levels");
        EXPECT_EQ(table_choice(c, "allgather", 65536), "ring");
        std::vector<std::string> everyone;
        for (int r = 0; r < n; ++r) everyone.push_back(std::string(1, static_cast<char>('a' + r)));
        const auto concat = cc::ordered([](std::string a, std::string b) { return a + b; });
        for (int root = 0; root < n; ++root) {
            const std::vector<double> v(8192, 1.0 + me);  // 64 KiB
            const auto total = cc::reduce(c, v, cc::sum{}, root);
            ASSERT_EQ(total.has_value(), me == root) << "root " << root;
            if (total) {
                EXPECT_EQ(*total, std::vector<double>(8192, 15.0));
            }
            // 64 KiB of letters, folded in rank order.
            const auto letters = std::string(65536, static_cast<char>('a' + me));
            const auto order = cc::reduce(c, letters, concat, root);
            if (order) {
                ASSERT_EQ(order->size(), 5u * 65536);
                for (int r = 0; r < n; ++r) EXPECT_EQ((*order)[static_cast<std::size_t>(r) * 65536], 'a' + r);
            }
            const auto g = cc::gather(c, everyone[static_cast<std::size_t>(me)], root);
            ASSERT_EQ(g.has_value(), me == root);
            if (g) {
                EXPECT_EQ(*g, everyone) << "root " << root;
            }
        }
        EXPECT_EQ(cc::allgather(c, everyone[static_cast<std::size_t>(me)]), everyone);
        EXPECT_EQ(c.upcoming_tag(cc::stream{}).sequence(), 0u) << "a call ran flat at rank " << me;
        // Outside the levels' sizes: the flat ones, on the whole communicator.
        EXPECT_EQ(cc::reduce(c, me + 1, cc::sum{}, 4).value_or(0), me == 4 ? 15 : 0);
        EXPECT_EQ(cc::allgather(c, std::vector<double>(8192, me)).size(), 5u);
        EXPECT_EQ(c.upcoming_tag(cc::stream{}).sequence(), 2u);
        cc::trace_log log;
        cc::traced tc(c, log);
        (void)cc::gather(tc, me, 2);
        (void)cc::allgather(tc, me);
        EXPECT_EQ(log.algorithms(), (std::vector<std::string>{"gather two_levels", "allgather two_levels"}));
    });
}

// A plain struct travels as its bytes, with no serialize function; the
// levels carry it so too (a first version put the hosts' parts in pairs
// and vectors of vectors, which only a serialize function could encode, so
// split(), whose allgather carries such a struct, stopped compiling).
struct point {
    int x;
    double y;
    bool operator==(const point&) const = default;
};

TEST(two_levels, a_plain_struct_without_a_serialize_function_crosses_the_levels) {
    hybrid_ranks("levels-struct", {3, 1, 2}, [](cc::hybrid_communicator& c) {
        std::vector<point> everyone;
        for (int r = 0; r < c.size(); ++r) everyone.push_back({r, 0.5 * r});
        const point mine = everyone[static_cast<std::size_t>(c.rank())];
        EXPECT_EQ(cc::allgather(c, mine), everyone);
        for (int root : {0, 3, 5}) {
            const auto g = cc::gather(c, mine, root);
            ASSERT_EQ(g.has_value(), c.rank() == root);
            if (g) {
                EXPECT_EQ(*g, everyone) << "root " << root;
            }
        }
        EXPECT_EQ(c.upcoming_tag(cc::stream{}).sequence(), 0u) << "a call ran flat at rank " << c.rank();
        auto halves = cc::split(c, c.rank() % 2, c.rank());
        ASSERT_TRUE(halves.has_value());
        EXPECT_EQ(halves->size(), 3);
    });
}

// Strings folded in rank order, 60 KiB at some ranks and 70 KiB at others:
// by its own size a rank would take the levels or arrival's tree (and
// below, the flat chain or arrival), so the ranks agree on the largest size
// first and all run one algorithm.
TEST(two_levels, a_fold_of_strings_whose_sizes_straddle_a_rules_bound_agrees_on_one_algorithm) {
    for (const std::vector<int>& fibers : {std::vector<int>{2, 3}, std::vector<int>{1, 1, 1, 1, 1}}) {
        hybrid_ranks("straddle", fibers, [](cc::hybrid_communicator& c) {
            const auto concat = cc::ordered([](std::string a, std::string b) { return a + b; });
            const auto mine = std::string(c.rank() % 2 == 0 ? 60000 : 70000, static_cast<char>('a' + c.rank()));
            std::size_t expected = 0;
            for (int r = 0; r < c.size(); ++r) expected += r % 2 == 0 ? 60000 : 70000;
            for (int root : {0, c.size() - 1}) {
                const auto total = cc::reduce(c, mine, concat, root);
                ASSERT_EQ(total.has_value(), c.rank() == root);
                if (total) {
                    EXPECT_EQ(total->size(), expected);
                    EXPECT_EQ(total->back(), 'a' + c.size() - 1);
                }
            }
            EXPECT_EQ(cc::allreduce(c, mine, concat).size(), expected);
            // A built-in op on strings: their sizes still differ.
            const auto last = std::string(c.size() % 2 == 1 ? 60000 : 70000, static_cast<char>('a' + c.size() - 1));
            EXPECT_EQ(cc::allreduce(c, mine, cc::maximum{}), last);
            EXPECT_EQ(cc::reduce(c, mine, cc::maximum{}, 1).value_or(last), last);
            EXPECT_EQ(cc::scan(c, mine, concat).back(), 'a' + c.rank());
            EXPECT_EQ(cc::allgather(c, mine).size(), static_cast<std::size_t>(c.size()));
        });
    }
}

// A hierarchy's levels take streams below 256 (context_pool.hpp).
TEST(two_levels, a_call_of_a_stream_the_levels_do_not_have_runs_flat) {
    hybrid_ranks("levels-stream", {3, 2}, [](cc::hybrid_communicator& c) {
        const auto request = cc::detail::request_of(c, "allreduce", cc::stream{300}, 8, true, false);
        EXPECT_NE(cc::selection::global().choose(request), "two_levels");
        EXPECT_EQ(cc::allreduce(c, c.rank() + 1, cc::sum{}, cc::stream{300}), 15);
        cc::barrier(c, cc::stream{300});
        EXPECT_EQ(c.upcoming_tag(cc::stream{300}).sequence(), 2u);
        EXPECT_EQ(cc::allreduce(c, c.rank() + 1, cc::sum{}, cc::stream{255}), 15);
        EXPECT_EQ(c.upcoming_tag(cc::stream{255}).sequence(), 0u);
    });
}

// One node, or one rank per node: nothing to fold first.
TEST(two_levels, a_job_of_one_node_or_of_one_rank_per_node_has_no_levels) {
    for (const auto& fibers : {std::vector<int>{3}, std::vector<int>{1, 1, 1}}) {
        hybrid_ranks("no-levels", fibers, [](cc::hybrid_communicator& c) {
            EXPECT_EQ(c.two_levels(), nullptr);
            EXPECT_NE(table_choice(c, "allreduce", 8), "two_levels");
            EXPECT_NE(table_choice(c, "barrier", 0), "two_levels");
            EXPECT_EQ(cc::allreduce(c, 2, cc::sum{}), 6);
            // Forced, it runs its flat fallback.
            EXPECT_EQ(cc::allreduce_two_levels(c, 2, cc::sum{}), 6);
        });
    }
}

// The levels hold the pool's first contexts, so the program's own groups
// (and a hierarchy it makes itself) take others and never meet them.
TEST(two_levels, a_programs_own_groups_and_hierarchy_work_beside_the_levels) {
    hybrid_ranks("levels-groups", {2, 2, 2}, [](cc::hybrid_communicator& c) {
        auto halves = cc::split(c, c.rank() % 2, c.rank());
        ASSERT_TRUE(halves.has_value());
        EXPECT_EQ(cc::allreduce(*halves, c.rank(), cc::sum{}), c.rank() % 2 == 0 ? 0 + 2 + 4 : 1 + 3 + 5);
        cc::hierarchy h(c, "node" + std::to_string(c.node()));
        EXPECT_EQ(cc::hierarchical::allreduce(h, c.rank(), cc::maximum{}), 5);
        EXPECT_EQ(cc::allreduce(c, c.rank(), cc::sum{}), 15);
        EXPECT_EQ(cc::allreduce(*halves, 1, cc::sum{}), 3);
    });
}

// An op that throws at one rank ends the call at every rank, on both
// levels: nobody waits for a fold that will not come.
TEST(two_levels, an_op_that_throws_at_one_rank_fails_the_call_at_every_rank) {
    std::atomic<int> failed{0};
    hybrid_ranks("levels-throw", {2, 3}, [&](cc::hybrid_communicator& c) {
        const auto picky = cc::ordered([](int a, int b) {
            if (a == 99 || b == 99) throw std::runtime_error("cannot fold 99");
            return a + b;
        });
        try {
            cc::allreduce(c, c.rank() == 3 ? 99 : 1, picky);
            ADD_FAILURE() << "rank " << c.rank() << " got an answer";
        } catch (const std::exception&) {
            ++failed;
        }
        // Another stream still works.
        EXPECT_EQ(cc::allreduce(c, 1, cc::sum{}, cc::stream{1}), 5);
    });
    EXPECT_EQ(failed.load(), 5);
}
