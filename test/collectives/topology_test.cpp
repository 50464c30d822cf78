// Topology functions: binomial trees for every size and root, and the
// butterfly and Aspen schedules simulated on sets of contributions.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <sstream>

#include "collectives/topology.hpp"

namespace topo = csp::collectives::topology;
using topo::transfer_kind;

TEST(binomial_tree, every_size_and_root_is_a_spanning_tree_of_log_depth) {
    for (int n = 1; n <= 64; ++n)
        for (int root = 0; root < n; ++root) {
            int roots = 0, max_depth = 0;
            for (int r = 0; r < n; ++r) {
                int parent = topo::binomial_parent(r, n, root);
                if (parent < 0) {
                    ++roots;
                    EXPECT_EQ(r, root);
                    continue;
                }
                auto siblings = topo::binomial_children(parent, n, root);
                EXPECT_EQ(std::count(siblings.begin(), siblings.end(), r), 1) << n << ' ' << root << ' ' << r;
                int depth = 0;
                for (int x = r; x != root; x = topo::binomial_parent(x, n, root)) {
                    ++depth;
                    ASSERT_LE(depth, n) << "cycle at size " << n;
                }
                max_depth = std::max(max_depth, depth);
                for (int c : topo::binomial_children(r, n, root)) EXPECT_EQ(topo::binomial_parent(c, n, root), r);
            }
            EXPECT_EQ(roots, 1);
            EXPECT_LE(max_depth, topo::ceil_log2(n)) << n;
            std::size_t edges = 0;
            for (int r = 0; r < n; ++r) edges += topo::binomial_children(r, n, root).size();
            EXPECT_EQ(edges, static_cast<std::size_t>(n - 1));
        }
}

TEST(binomial_tree, children_hold_adjacent_ascending_ranges) {
    // Rooted at 0, a node v and its children in order cover [v, v + span).
    for (int n = 1; n <= 64; ++n) {
        std::map<int, std::pair<int, int>> range;  // node -> [lo, hi)
        for (int v = n - 1; v >= 0; --v) {
            int hi = v + 1;
            for (int c : topo::binomial_children(v, n, 0)) {
                EXPECT_EQ(range.at(c).first, hi);
                hi = range.at(c).second;
            }
            range[v] = {v, hi};
        }
        EXPECT_EQ(range[0], std::make_pair(0, n));
    }
}

TEST(binomial_tree, bad_arguments_are_named) {
    EXPECT_THROW(topo::binomial_children(5, 4, 0), csp::usage_error);
    EXPECT_THROW(topo::binomial_parent(0, 4, 7), csp::usage_error);
    try {
        topo::binomial_parent(0, 0, 0);
        FAIL();
    } catch (const csp::usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("group size 0"), std::string::npos);
    }
}

// Runs a schedule on sets: who holds which contributions. Values are sent as
// they were at the start of the round. Returns each rank's final set.
static std::map<int, std::multiset<int>> simulate(const topo::schedule& s) {
    std::map<int, std::multiset<int>> has;
    for (int p : s.participants) has[p] = {p};
    for (const auto& round : s.rounds) {
        auto before = has;
        for (const auto& t : round) {
            EXPECT_TRUE(before.count(t.from)) << "rank " << t.from << " sends without a value";
            if (t.kind == transfer_kind::deliver) has[t.to] = before[t.from];
            else has[t.to].insert(before[t.from].begin(), before[t.from].end());
        }
    }
    return has;
}

TEST(butterfly_schedule, every_rank_ends_with_each_contribution_once) {
    for (int n = 1; n <= 64; ++n) {
        auto s = topo::butterfly_schedule(n);
        auto has = simulate(s);
        std::multiset<int> all;
        for (int r = 0; r < n; ++r) all.insert(r);
        for (int r = 0; r < n; ++r) EXPECT_EQ(has[r], all) << "size " << n << " rank " << r;
        const int p2 = topo::floor_pow2(n);
        const std::size_t rounds = static_cast<std::size_t>(topo::ceil_log2(p2) + (p2 == n ? 0 : 2));
        EXPECT_EQ(s.rounds.size(), rounds) << n;
    }
}

TEST(butterfly_schedule, combines_keep_rank_order) {
    // Simulate with ordered ranges: a combine must join adjacent ranges.
    for (int n = 1; n <= 33; ++n) {
        auto s = topo::butterfly_schedule(n);
        std::map<int, std::pair<int, int>> has;  // [lo, hi]
        for (int r = 0; r < n; ++r) has[r] = {r, r};
        for (const auto& round : s.rounds) {
            auto before = has;
            for (const auto& t : round) {
                auto a = before[t.from], b = before[t.to];
                if (t.kind == transfer_kind::deliver) {
                    has[t.to] = a;
                    continue;
                }
                auto [lo, hi] = t.sender_first ? std::pair{a, b} : std::pair{b, a};
                ASSERT_EQ(lo.second + 1, hi.first) << "size " << n << ": " << t.from << "->" << t.to;
                has[t.to] = {lo.first, hi.second};
            }
        }
        for (int r = 0; r < n; ++r) EXPECT_EQ(has[r], std::make_pair(0, n - 1)) << n;
    }
}

TEST(aspen_schedule, the_papers_worked_case) {
    // The paper numbers 1..11; ranks here are the same numbers.
    auto s = topo::aspen_schedule({1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 9, 10, 11});
    std::ostringstream os;
    os << s;
    EXPECT_EQ(os.str(),
              "round 1: 5->1 6->2 7->3 8->4\n"
              "round 2: 2->1 1->2 4->3 3->4\n"
              "round 3: 3->1 4->2 1->3\n"
              "round 4: 1=>9 2=>10 3=>11\n");
}

TEST(aspen_schedule, one_receiver_is_a_tree_reduce_and_all_receivers_a_butterfly) {
    auto tree = topo::aspen_schedule({0, 1, 2, 3, 4, 5, 6, 7}, {0});
    ASSERT_EQ(tree.rounds.size(), 3u);
    for (const auto& round : tree.rounds)
        for (const auto& t : round) EXPECT_LT(t.to, t.from);  // upper half folds into lower
    EXPECT_EQ(tree.rounds[2], (std::vector<topo::transfer>{{1, 0}}));

    auto all = topo::aspen_schedule({0, 1, 2, 3}, {0, 1, 2, 3});
    ASSERT_EQ(all.rounds.size(), 2u);
    EXPECT_EQ(all.rounds[0].size(), 4u);
    EXPECT_EQ(all.rounds[1].size(), 4u);
}

TEST(aspen_schedule, random_sets_reach_every_receiver_and_no_one_else) {
    std::mt19937 rng(20261121);
    for (int trial = 0; trial < 2000; ++trial) {
        const int universe = 1 + static_cast<int>(rng() % 24);
        std::vector<int> P, R;
        for (int r = 0; r < universe; ++r) {
            if (rng() % 2) P.push_back(r);
            if (rng() % 3 == 0) R.push_back(r);
        }
        if (P.empty()) P.push_back(static_cast<int>(rng() % universe));
        if (trial % 5 == 0) R = P;                                   // allreduce
        if (trial % 7 == 0) R = {static_cast<int>(rng() % universe)};  // one receiver
        auto s = topo::aspen_schedule(P, R);
        auto has = simulate(s);
        const std::multiset<int> all(P.begin(), P.end());
        for (int r : R) EXPECT_EQ(has[r], all) << "trial " << trial << " receiver " << r;
        // The paper's stage bound, with every receiver counted as one that
        // may have to be reached after the reduction.
        const int bound = 2 + topo::ceil_log2(std::max(topo::floor_pow2(static_cast<int>(P.size())),
                                                       static_cast<int>(R.size())));
        EXPECT_LE(static_cast<int>(s.rounds.size()), bound) << "trial " << trial;
    }
}

TEST(aspen_schedule, receivers_outnumbering_participants_get_it_by_broadcast_trees) {
    auto s = topo::aspen_schedule({0, 1}, {0, 2, 3, 4, 5, 6, 7, 8, 9});
    auto has = simulate(s);
    for (int r : {0, 2, 3, 4, 5, 6, 7, 8, 9}) EXPECT_EQ(has[r], (std::multiset<int>{0, 1})) << r;
    // Holders double each round: 1 fold, then 2 -> 4 -> 8 -> 16.
    EXPECT_LE(s.rounds.size(), 5u);
}

TEST(aspen_schedule, bad_sets_are_named) {
    EXPECT_THROW(topo::aspen_schedule({}, {0}), csp::usage_error);
    EXPECT_THROW(topo::aspen_schedule({0, 0}, {0}), csp::usage_error);
    EXPECT_THROW(topo::aspen_schedule({0, -1}, {0}), csp::usage_error);
    EXPECT_TRUE(topo::aspen_schedule({0, 1}, {}).rounds.empty());
}
