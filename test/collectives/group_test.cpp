// Splitting communicators (group.hpp) and the two-level collectives
// (hierarchy.hpp) over local channels, against flat references.
#include <gtest/gtest.h>

#include <algorithm>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "collectives/collectives.hpp"
#include "collectives/group.hpp"
#include "collectives/hierarchy.hpp"
#include "csp/runtime.hpp"
#include "csp/timer.hpp"
#include "grid.hpp"

namespace cc = csp::collectives;
using grid::fold;

namespace {

TEST(split, colours_make_groups_ordered_by_key_then_rank) {
    csp::run([] {
        cc::run_local(7, [](cc::local_communicator& c) {
            const int me = c.rank();
            // Colour me % 3 (rank 6 opts out); key descending by rank except
            // ties on key 0 for ranks 0 and 3, which keep rank order.
            const int color = me == 6 ? cc::undefined : me % 3;
            const int key = me == 0 || me == 3 ? 0 : 10 - me;
            auto g = cc::split(c, color, key);
            if (me == 6) {
                EXPECT_FALSE(g.has_value());
                return;
            }
            ASSERT_TRUE(g.has_value());
            const std::vector<std::vector<int>> want = {{0, 3}, {4, 1}, {5, 2}};
            EXPECT_EQ(g->members(), want[static_cast<std::size_t>(me % 3)]);
            EXPECT_EQ(g->member(g->rank()), me);
            // A collective on the group sees its members only, in group order.
            EXPECT_EQ(cc::allgather(*g, me), g->members());
            EXPECT_EQ(cc::allreduce(*g, me, cc::sum{}), want[static_cast<std::size_t>(me % 3)][0] +
                                                            want[static_cast<std::size_t>(me % 3)][1]);
        });
    });
}

TEST(split, groups_split_again_and_never_meet_their_parents_calls) {
    csp::run([] {
        cc::run_local(8, [](cc::local_communicator& c) {
            const int me = c.rank();
            auto half = cc::split(c, me / 4, me);
            auto quarter = cc::split(*half, half->rank() / 2, half->rank());
            EXPECT_EQ(quarter->size(), 2);
            // Parent, child and grandchild calls interleave in one stream
            // number each; none takes another's messages.
            const long all = cc::allreduce(c, long(me), cc::sum{});
            const long in_half = cc::allreduce(*half, long(me), cc::sum{});
            const long in_quarter = cc::allreduce(*quarter, long(me), cc::sum{});
            EXPECT_EQ(all, 28);
            EXPECT_EQ(in_half, me < 4 ? 6 : 22);
            EXPECT_EQ(in_quarter, (me / 2) * 4 + 1);
            EXPECT_NE(half->context(), quarter->context());
            // Different colours of one split share a context: no members in common.
            const auto contexts = cc::allgather(c, half->context());
            EXPECT_EQ(contexts.front(), contexts.back());
        });
    });
}

TEST(split, concurrent_calls_on_two_groups_in_one_rank_keep_apart) {
    csp::run([] {
        cc::run_local(6, [](cc::local_communicator& c) {
            const int me = c.rank();
            auto evens = cc::split(c, me % 2, me);
            auto lows = cc::split(c, me < 3 ? 0 : 1, me);
            for (int round = 0; round < 50; ++round) {
                auto [a, b] = csp::par([&] { return cc::allreduce(*evens, me + round, cc::sum{}); },
                                       [&] { return cc::allreduce(*lows, me * round, cc::maximum{}); });
                EXPECT_EQ(a, (me % 2 == 0 ? 0 + 2 + 4 : 1 + 3 + 5) + 3 * round);
                EXPECT_EQ(b, (me < 3 ? 2 : 5) * round);
            }
        });
    }, {.threads = 2});
}

TEST(split, contexts_are_given_back_when_groups_go) {
    csp::run([] {
        cc::run_local(3, [](cc::local_communicator& c) {
            for (int i = 0; i < 2 * cc::context_pool::capacity; ++i) {
                auto g = cc::split(c, c.rank() % 2, 0);
                EXPECT_EQ(g->context(), 0);
            }
            // Held groups take contexts one after another.
            std::vector<cc::group<cc::local_communicator>> held;
            for (int i = 0; i < 5; ++i) {
                held.push_back(std::move(*cc::split(c, 0, 0)));
                EXPECT_EQ(held.back().context(), i);
            }
        });
    });
}

TEST(split, a_bad_colour_or_group_stream_is_named_on_every_rank) {
    std::atomic<int> refused{0};
    csp::run([&] {
        cc::run_local(3, [&](cc::local_communicator& c) {
            try {
                cc::split(c, c.rank() == 1 ? -7 : 0, 0);
                ADD_FAILURE() << "a colour of -7 was taken";
            } catch (const csp::usage_error& e) {
                EXPECT_NE(std::string(e.what()).find("rank 1 passed colour -7"), std::string::npos) << e.what();
                ++refused;
            }
            auto g = cc::split(c, 0, 0);
            EXPECT_THROW(cc::allreduce(*g, 1, cc::sum{}, cc::stream{256}), csp::usage_error);
        });
    });
    EXPECT_EQ(refused.load(), 3);
}

// Hosts as names: `layout` gives each rank's host.
template <class F>
void on_hosts(const std::vector<std::string>& layout, F body, std::size_t threads = 1) {
    csp::run([&] {
        cc::run_local(static_cast<int>(layout.size()), [&](cc::local_communicator& c) {
            cc::hierarchy h(c, layout[static_cast<std::size_t>(c.rank())]);
            body(c, h);
        });
    }, {.threads = threads});
}

const std::vector<std::vector<std::string>> layouts = {
    {"a"},
    {"a", "a", "a", "b", "b", "c", "c", "c"},    // contiguous, uneven
    {"a", "b", "a", "b", "c", "a", "b"},         // interleaved
    {"x", "y", "z", "w"},                        // one rank per host
};

TEST(hierarchy, groups_by_host_with_the_lowest_rank_leading) {
    on_hosts(layouts[2], [](cc::local_communicator& c, cc::hierarchy<cc::local_communicator>& h) {
        const std::vector<std::vector<int>> by_host = {{0, 2, 5}, {1, 3, 6}, {4}};
        const int me = c.rank();
        const int host = me == 4 ? 2 : (me == 0 || me == 2 || me == 5) ? 0 : 1;
        EXPECT_EQ(h.local().members(), by_host[static_cast<std::size_t>(host)]);
        EXPECT_EQ(h.is_leader(), me == 0 || me == 1 || me == 4);
        if (h.is_leader()) {
            EXPECT_EQ(h.leaders()->members(), (std::vector<int>{0, 1, 4}));
        }
        EXPECT_EQ(h.hosts(), 3);
        EXPECT_FALSE(h.contiguous());
    });
    on_hosts(layouts[1], [](cc::local_communicator&, cc::hierarchy<cc::local_communicator>& h) {
        EXPECT_TRUE(h.contiguous());
        EXPECT_EQ(h.hosts(), 3);
    });
}

TEST(hierarchy, collectives_match_the_flat_ones_for_every_layout_root_and_op) {
    for (const auto& layout : layouts)
        for (std::size_t threads : {1u, 2u})
            on_hosts(layout, [&](cc::local_communicator& c, cc::hierarchy<cc::local_communicator>& h) {
                const int n = c.size(), me = c.rank();
                auto numbers = [](int r) { return grid::numbers_of(r, 5); };
                auto letter = [](int r) { return std::string(1, static_cast<char>('a' + r)); };
                EXPECT_EQ(cc::hierarchical::allreduce(h, numbers(me), cc::sum{}), *fold(0, n, numbers, cc::sum{}));
                EXPECT_EQ(cc::hierarchical::allreduce(h, letter(me), grid::concat), *fold(0, n, letter, grid::concat))
                    << "rank order";
                std::vector<std::string> everyone;
                for (int r = 0; r < n; ++r) everyone.push_back(letter(r));
                EXPECT_EQ(cc::hierarchical::allgather(h, letter(me)), everyone);
                EXPECT_EQ(cc::hierarchical::scan(h, letter(me), grid::concat), *fold(0, me + 1, letter, grid::concat));
                EXPECT_EQ(cc::hierarchical::exscan(h, letter(me), grid::concat), fold(0, me, letter, grid::concat));
                EXPECT_EQ(cc::hierarchical::scan(h, numbers(me), cc::sum{}), *fold(0, me + 1, numbers, cc::sum{}));
                for (int root = 0; root < n; ++root) {
                    auto r = cc::hierarchical::reduce(h, letter(me), grid::concat, root);
                    EXPECT_EQ(r.has_value(), me == root) << "root " << root;
                    if (r) {
                        EXPECT_EQ(*r, *fold(0, n, letter, grid::concat));
                    }
                    auto g = cc::hierarchical::gather(h, letter(me), root);
                    EXPECT_EQ(g.has_value(), me == root);
                    if (g) {
                        EXPECT_EQ(*g, everyone) << "root " << root;
                    }
                    auto m = cc::hierarchical::reduce(h, me + 1, cc::maximum{}, root);
                    if (m) {
                        EXPECT_EQ(*m, n);
                    }
                    EXPECT_EQ(
                        cc::hierarchical::broadcast(h, me == root ? numbers(root) : std::vector<std::int64_t>{}, root),
                        numbers(root));
                }
            }, threads);
}

// Where hosts hold consecutive ranks, the leaders find the root's leader
// from their own ranks: a rooted call's leaders' step draws one tag of
// their group (its own), where interleaved hosts need an allreduce first.
TEST(hierarchy, a_rooted_call_on_hosts_of_consecutive_ranks_finds_the_roots_leader_without_a_message) {
    for (const std::size_t which : {1u, 2u})
        on_hosts(layouts[which], [&](cc::local_communicator& c, cc::hierarchy<cc::local_communicator>& h) {
            const int root = c.size() - 2;  // on the last host but one (c) or the second (b)
            const auto value = cc::hierarchical::broadcast(h, c.rank() == root ? 7 : 0, root);
            EXPECT_EQ(value, 7);
            const auto r = cc::hierarchical::reduce(h, c.rank() + 1, cc::sum{}, root);
            EXPECT_EQ(r.has_value(), c.rank() == root);
            if (r) {
                EXPECT_EQ(*r, c.size() * (c.size() + 1) / 2);
            }
            if (h.is_leader()) {
                EXPECT_EQ(h.leaders()->upcoming_tag(cc::stream{}).sequence(), which == 1 ? 2u : 4u)
                    << "layout " << which << ", leader " << c.rank();
            }
        });
}

TEST(hierarchy, allreduce_across_splits_a_vector_over_the_ranks_of_hosts_of_equal_size) {
    const std::vector<std::vector<std::string>> uniform = {
        {"a", "a", "b", "b", "c", "c"},  // contiguous
        {"a", "b", "a", "b"},            // interleaved
        {"a", "a", "a", "b", "b", "b"},
    };
    for (const auto& layout : uniform)
        for (std::size_t threads : {1u, 2u})
            on_hosts(layout, [&](cc::local_communicator& c, cc::hierarchy<cc::local_communicator>& h) {
                const int n = c.size(), me = c.rank();
                // The ranks of my local index, one per host, in rank order.
                ASSERT_NE(h.across(), nullptr);
                auto local_index = [&](int r) {
                    const auto at = layout.begin() + r;
                    return std::count(layout.begin(), at, *at);
                };
                std::vector<int> want;
                for (int r = 0; r < n; ++r)
                    if (local_index(r) == local_index(me)) want.push_back(r);
                EXPECT_EQ(h.across()->members(), want);
                // Blocks of different lengths (one more than a multiple of
                // the host's size), fewer elements than ranks, none.
                for (std::size_t len : {std::size_t{10001}, std::size_t{1}, std::size_t{0}}) {
                    auto numbers = [len](int r) { return grid::numbers_of(r, len); };
                    EXPECT_EQ(cc::hierarchical::allreduce_across(h, numbers(me), cc::sum{}),
                              *fold(0, n, numbers, cc::sum{}))
                        << "length " << len;
                    EXPECT_EQ(cc::hierarchical::allreduce_across(h, numbers(me), cc::minimum{}),
                              *fold(0, n, numbers, cc::minimum{}))
                        << "length " << len;
                }
                EXPECT_THROW(cc::hierarchical::allreduce_across(h, 1L, cc::sum{}), csp::usage_error);
                EXPECT_THROW(cc::hierarchical::allreduce_across(h, grid::mats_of(me, 2), grid::mats_product),
                             csp::usage_error);
            }, threads);
    // Hosts of different sizes, or of one rank each, have no such groups.
    on_hosts(layouts[1], [](cc::local_communicator& c, cc::hierarchy<cc::local_communicator>& h) {
        EXPECT_EQ(h.across(), nullptr);
        EXPECT_THROW(cc::hierarchical::allreduce_across(h, grid::numbers_of(c.rank(), 3), cc::sum{}), csp::usage_error);
    });
    on_hosts(layouts[3], [](cc::local_communicator&, cc::hierarchy<cc::local_communicator>& h) {
        EXPECT_EQ(h.across(), nullptr);
    });
}

TEST(hierarchy, the_global_barrier_waits_for_everyone_the_local_one_for_the_host) {
    for (int round = 0; round < 20; ++round) {
        std::atomic<int> arrived{0};
        std::vector<std::atomic<int>> on_host(3);
        on_hosts(layouts[1], [&](cc::local_communicator& c, cc::hierarchy<cc::local_communicator>& h) {
            const int me = c.rank();
            const auto host = static_cast<std::size_t>(me < 3 ? 0 : me < 5 ? 1 : 2);
            if (me % 3 == round % 3) csp::sleep_for(std::chrono::microseconds(200));  // someone is late
            ++on_host[host];
            cc::hierarchical::local_barrier(h);
            EXPECT_EQ(on_host[host].load(), h.local().size());
            ++arrived;
            cc::hierarchical::barrier(h);
            EXPECT_EQ(arrived.load(), c.size());
        }, 2);
    }
}

// An element-wise allreduce hands its result out inside each host into a
// buffer as long as each rank's vector (broadcast_into): vectors of two
// lengths are a usage_error, and no rank waits for ever.
TEST(hierarchy, an_elementwise_allreduce_of_vectors_of_two_lengths_is_refused) {
    const auto& layout = layouts[1];
    EXPECT_THROW(csp::run([&] {
        cc::run_local(static_cast<int>(layout.size()), [&](cc::local_communicator& c) {
            cc::hierarchy h(c, layout[static_cast<std::size_t>(c.rank())]);
            const std::vector<long> v(c.rank() == 3 ? 4 : 5, 1);
            (void)cc::hierarchical::allreduce(h, v, cc::sum{});
        });
    }),
                 csp::usage_error);
    // Of one length, every element is counted at every rank.
    csp::run([&] {
        cc::run_local(static_cast<int>(layout.size()), [&](cc::local_communicator& c) {
            cc::hierarchy h(c, layout[static_cast<std::size_t>(c.rank())]);
            const std::vector<long> v(5000, c.rank() + 1);
            const long n = c.size();
            EXPECT_EQ(cc::hierarchical::allreduce(h, v, cc::sum{}), std::vector<long>(5000, n * (n + 1) / 2));
        });
    });
}

// A rank that fails inside a two-level collective fails it at every rank:
// ranks on its host, leaders, and ranks on other hosts, none waits forever.
TEST(hierarchy, a_failing_rank_fails_the_collective_on_every_rank) {
    std::atomic<int> failed{0};
    const auto& layout = layouts[1];
    EXPECT_THROW(csp::run([&] {
        cc::run_local(static_cast<int>(layout.size()), [&](cc::local_communicator& c) {
            cc::hierarchy h(c, layout[static_cast<std::size_t>(c.rank())]);
            if (c.rank() == 4) {
                cc::barrier(c);  // everyone has its hierarchy
                throw std::runtime_error("rank 4 gave up");
            }
            try {
                cc::barrier(c);  // may be the call that fails, if rank 4 is quick
                cc::hierarchical::allreduce(h, c.rank(), cc::sum{});
                ADD_FAILURE() << "rank " << c.rank() << " finished an allreduce that rank 4 left";
            } catch (const std::runtime_error& e) {
                EXPECT_NE(std::string(e.what()).find("rank 4 gave up"), std::string::npos) << e.what();
                ++failed;
            }
        });
    }),
                 std::runtime_error);
    EXPECT_EQ(failed.load(), 7);
}

}  // namespace
