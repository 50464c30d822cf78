// Algorithm selection: the table, forcing by name, the fallback, printing.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <sstream>

#include "collectives/collectives.hpp"
#include "csp/runtime.hpp"

namespace cc = csp::collectives;

namespace {

struct forced_guard {
    ~forced_guard() { cc::selection::global().unforce_all(); }
};

std::vector<std::string> algorithms_run(int n, const std::function<void(cc::traced<cc::local_communicator>&)>& f) {
    cc::trace_log log;
    csp::run([&] {
        cc::run_local(n, [&](cc::local_communicator& c) {
            cc::traced tc(c, log);
            f(tc);
        });
    });
    auto all = log.algorithms();
    return {all.begin(), all.begin() + std::min<std::ptrdiff_t>(1, static_cast<std::ptrdiff_t>(all.size()))};
}

// The log's entries of one collective (an algorithm made of others, as
// gather_broadcast is, logs theirs too).
std::vector<std::string> entries_of(const cc::trace_log& log, const std::string& collective) {
    std::vector<std::string> out;
    for (auto& a : log.algorithms())
        if (a.starts_with(collective + " ")) out.push_back(a);
    return out;
}

// The request of a job whose ranks outnumber their CPUs (selection.hpp).
cc::selection::request crowded(cc::selection::request r) {
    r.crowded = true;
    return r;
}

}  // namespace

TEST(selection, the_table_chooses_by_group_and_message_size) {
    auto& s = cc::selection::global();
    EXPECT_EQ(s.choose({"broadcast", 3, 8, true}), "flat");
    EXPECT_EQ(s.choose({"broadcast", 16, 8, true}), "binomial");
    EXPECT_EQ(s.choose({"reduce", 16, 8, true}), "arrival");
    EXPECT_EQ(s.choose({"reduce", 16, 8, false}), "binomial_parallel");  // arrival needs commuting
    EXPECT_EQ(s.choose({"reduce", 16, 1 << 20, false}), "chain");
    EXPECT_EQ(s.choose({"reduce", 4, 1 << 20, false, true}), "pipeline");  // a vector, an element-wise op
    EXPECT_EQ(s.choose(crowded({"allreduce", 4, 8, true})), "butterfly");
    EXPECT_EQ(s.choose(crowded({"allreduce", 8, 8, true})), "reduce_broadcast");
    EXPECT_EQ(s.choose(crowded({"allreduce", 4, 65536, true})), "butterfly");
    // Two ranks: one exchange of the whole value from 64 KiB to below 256 KiB.
    EXPECT_EQ(s.choose({"allreduce", 2, 65536, true}), "butterfly");
    EXPECT_EQ(s.choose({"allreduce", 2, 65536, true, true}), "butterfly");
    EXPECT_EQ(s.choose({"allreduce", 2, 256 * 1024 - 1, true, true}), "butterfly");
    EXPECT_EQ(s.choose({"allreduce", 2, 256 * 1024, true, true}), "rabenseifner");
    // Rabenseifner from 64 KiB, for vectors with an element-wise op that commutes.
    EXPECT_EQ(s.choose({"allreduce", 8, 1 << 20, true, true}), "rabenseifner");
    EXPECT_EQ(s.choose({"allreduce", 4, 96 * 1024, true, true}), "rabenseifner");
    EXPECT_EQ(s.choose({"allreduce", 7, 65536, true, true}), "rabenseifner");
    // Four ranks: the butterfly's two whole exchanges below 96 KiB.
    EXPECT_EQ(s.choose(crowded({"allreduce", 4, 65536, true, true})), "butterfly");
    EXPECT_EQ(s.choose(crowded({"allreduce", 3, 96 * 1024 - 1, true, true})), "butterfly");
    // From 8 ranks the tree below 128 KiB (more ranks than cores), and for
    // values Rabenseifner's cannot take from 16 KiB.
    EXPECT_EQ(s.choose(crowded({"allreduce", 8, 65536, true, true})), "reduce_broadcast");
    EXPECT_EQ(s.choose(crowded({"allreduce", 16, 128 * 1024 - 1, true, true})), "reduce_broadcast");
    EXPECT_EQ(s.choose(crowded({"allreduce", 8, 128 * 1024, true, true})), "rabenseifner");
    EXPECT_EQ(s.choose(crowded({"allreduce", 8, 1 << 20, true, false})), "reduce_broadcast");
    EXPECT_EQ(s.choose(crowded({"allreduce", 8, 1 << 20, false, true})), "reduce_broadcast");
    EXPECT_EQ(s.choose({"allgather", 8, 65536, true}), "ring");
    EXPECT_EQ(s.choose({"allgather", 8, 1024, true}), "gather_broadcast");
    EXPECT_EQ(s.choose({"reduce_scatter", 4, 65536, true}), "ring");
    EXPECT_EQ(s.choose({"reduce_scatter", 8, 65536, true}), "reduce_then_scatter");
    EXPECT_EQ(s.choose({"reduce_scatter", 8, 1 << 20, true}), "ring");
    EXPECT_EQ(s.choose({"reduce_scatter", 8, 1 << 20, false}), "reduce_then_scatter");
    // Ranks that share an address space meet on a board, for any op.
    EXPECT_EQ(s.choose({"allreduce", 8, 8, false, false, true}), "shared_memory");
    EXPECT_EQ(s.choose({"allreduce", 8, 1 << 20, true, true, true}), "shared_memory");
    EXPECT_EQ(s.choose({"reduce", 16, 8, false, false, true}), "shared_memory");
    EXPECT_EQ(s.choose({"broadcast", 3, 8, true, false, true}), "shared_memory");
    EXPECT_EQ(s.choose({"barrier", 3, 0, true, false, true}), "shared_memory");
    EXPECT_EQ(s.choose(crowded({"barrier", 3, 0, true, false, false})), "flat_parallel");
    // Barriers over a network with more ranks than cores: one crossing at 2
    // ranks, rank 0 gathering up to 8, the tree beyond.
    EXPECT_EQ(s.choose({"barrier", 2, 0, true, false, false}), "dissemination");
    EXPECT_EQ(s.choose(crowded({"barrier", 8, 0, true, false, false})), "flat_parallel");
    EXPECT_EQ(s.choose(crowded({"barrier", 9, 0, true, false, false})), "binomial");
}

// A job not known to be crowded (a core per rank, or several hosts) takes
// the algorithms of fewer rounds where the crowded rules took fewer
// messages; the rules measured without crowding (two ranks) hold for both.
TEST(selection, a_job_with_a_core_per_rank_takes_fewer_rounds) {
    auto& s = cc::selection::global();
    // Small values: the butterfly at every group size.
    EXPECT_EQ(s.choose({"allreduce", 8, 8, true}), "butterfly");
    EXPECT_EQ(s.choose({"allreduce", 64, 8, false}), "butterfly");
    EXPECT_EQ(s.choose({"allreduce", 8, 32 * 1024, true, true}), "butterfly");
    // Values Rabenseifner's cannot take (one not element-wise, an op that
    // does not commute): the butterfly at any size.
    EXPECT_EQ(s.choose({"allreduce", 8, 1 << 20, true, false}), "butterfly");
    EXPECT_EQ(s.choose({"allreduce", 8, 1 << 20, false, true}), "butterfly");
    // Rabenseifner's from 64 KiB wherever the crowded rules took whole values.
    EXPECT_EQ(s.choose({"allreduce", 4, 65536, true, true}), "rabenseifner");
    EXPECT_EQ(s.choose({"allreduce", 3, 96 * 1024 - 1, true, true}), "rabenseifner");
    EXPECT_EQ(s.choose({"allreduce", 8, 65536, true, true}), "rabenseifner");
    EXPECT_EQ(s.choose({"allreduce", 16, 128 * 1024 - 1, true, true}), "rabenseifner");
    // Two ranks: measured on this 2-core machine, the same either way.
    for (bool c : {false, true}) {
        cc::selection::request r{"allreduce", 2, 65536, true, true};
        r.crowded = c;
        EXPECT_EQ(s.choose(r), "butterfly") << c;
        r.bytes = 256 * 1024;
        EXPECT_EQ(s.choose(r), "rabenseifner") << c;
    }
    // Barriers: dissemination at every size.
    EXPECT_EQ(s.choose({"barrier", 3, 0, true, false, false}), "dissemination");
    EXPECT_EQ(s.choose({"barrier", 8, 0, true, false, false}), "dissemination");
    EXPECT_EQ(s.choose({"barrier", 100, 0, true, false, false}), "dissemination");
    // Scans of two processes of one host: the board where each has a core,
    // the chain where they share one (below the board's 64 KiB rule).
    using cc::link_level;
    EXPECT_EQ(s.choose({"scan", 2, 8, true, false, false, link_level::host}), "host_memory");
    EXPECT_EQ(s.choose(crowded({"scan", 2, 8, true, false, false, link_level::host})), "pipeline");
    EXPECT_EQ(s.choose(crowded({"exscan", 2, 8, true, false, false, link_level::host})), "pipeline");
    EXPECT_EQ(s.choose(crowded({"scan", 2, 65536, true, false, false, link_level::host})), "host_memory");
}

TEST(selection, forcing_by_name_runs_that_algorithm) {
    forced_guard g;
    cc::selection::global().force("allreduce", "reduce_broadcast");
    EXPECT_EQ(algorithms_run(4, [](auto& c) { EXPECT_EQ(cc::allreduce(c, 2, cc::sum{}), 8); }),
              std::vector<std::string>{"allreduce reduce_broadcast"});
    cc::selection::global().unforce("allreduce");
    EXPECT_EQ(algorithms_run(4, [](auto& c) { cc::allreduce(c, 2, cc::sum{}); }),
              std::vector<std::string>{"allreduce shared_memory"});
}

// A communicator with levels of its own (a hybrid job's, two_levels.hpp):
// its allreduce below 1 MiB and its barrier fold each node's ranks first;
// without levels the table never takes them.
TEST(selection, a_communicator_with_two_levels_gets_them_for_allreduce_below_1_MiB_and_barrier) {
    auto& s = cc::selection::global();
    auto levels = [](cc::selection::request r) {
        r.two_levels = true;
        return r;
    };
    EXPECT_EQ(s.choose(levels({"allreduce", 8, 8, true})), "two_levels");
    EXPECT_EQ(s.choose(levels({"allreduce", 8, 512 * 1024, true, true})), "two_levels");
    EXPECT_EQ(s.choose(levels({"allreduce", 8, 1 << 20, true, true})), "rabenseifner");
    EXPECT_EQ(s.choose(levels({"barrier", 8, 0, true})), "two_levels");
    for (int ranks : {2, 5, 64}) {
        EXPECT_NE(s.choose({"allreduce", ranks, 8, true}), "two_levels");
        EXPECT_NE(s.choose({"barrier", ranks, 0, true}), "two_levels");
    }
}

// choose() skips the overrides without a lock while none is in force, so
// the flag that says so must follow every force and unforce.
TEST(selection, unforcing_one_collective_keeps_the_others_overrides) {
    forced_guard g;
    auto& s = cc::selection::global();
    s.force("allreduce", "reduce_broadcast");
    s.force("barrier", "flat_sequential");
    s.unforce("allreduce");
    s.unforce("scan");  // not forced: changes nothing
    EXPECT_EQ(s.choose({"barrier", 3, 0, true, false, true}), "flat_sequential");
    EXPECT_EQ(s.choose({"allreduce", 4, 8, true, false, true}), "shared_memory");
    s.unforce("barrier");
    EXPECT_EQ(s.choose({"barrier", 3, 0, true, false, true}), "shared_memory");
    s.force("barrier", "binomial");
    EXPECT_EQ(s.choose({"barrier", 3, 0, true, false, true}), "binomial");
    s.unforce_all();
    EXPECT_EQ(s.choose({"barrier", 3, 0, true, false, true}), "shared_memory");
}

TEST(selection, a_forced_algorithm_that_cannot_apply_falls_back_to_the_table) {
    forced_guard g;
    cc::selection::global().force("reduce", "arrival");
    auto cat = cc::ordered([](const std::string& a, const std::string& b) { return a + b; });
    // (The table's choice for ranks of one address space.)
    EXPECT_EQ(algorithms_run(8, [&](auto& c) { cc::reduce(c, std::string("x"), cat); }),
              std::vector<std::string>{"reduce shared_memory"});
    EXPECT_EQ(algorithms_run(8, [&](auto& c) { cc::reduce(c, 1, cc::sum{}); }),
              std::vector<std::string>{"reduce arrival"});
    // The ring cuts vectors into blocks: a single value, or a user's op on
    // vectors that does not say it acts element by element, goes to the table.
    cc::selection::global().force("allreduce", "ring");
    auto user_sum = cc::commuting([](const std::vector<int>& a, const std::vector<int>& b) {
        return std::vector<int>{a[0] + b[0]};
    });
    EXPECT_EQ(algorithms_run(4, [&](auto& c) { EXPECT_EQ(cc::allreduce(c, 2, cc::sum{}), 8); }),
              std::vector<std::string>{"allreduce shared_memory"});
    EXPECT_EQ(algorithms_run(4, [&](auto& c) { EXPECT_EQ(cc::allreduce(c, std::vector<int>{2}, user_sum)[0], 8); }),
              std::vector<std::string>{"allreduce shared_memory"});
    EXPECT_EQ(algorithms_run(4, [&](auto& c) { EXPECT_EQ(cc::allreduce(c, std::vector<int>{2, 1}, cc::sum{})[1], 4); }),
              std::vector<std::string>{"allreduce ring"});
}

TEST(selection, unknown_names_are_refused_with_the_choices) {
    try {
        cc::selection::global().force("reduce", "quantum");
        FAIL();
    } catch (const csp::usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("\"quantum\""), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("binomial_parallel"), std::string::npos);
    }
    EXPECT_THROW(cc::selection::global().force("allsum", "linear"), csp::usage_error);
    EXPECT_THROW(cc::selection::parse_overrides("reduce"), csp::usage_error);
    auto parsed = cc::selection::parse_overrides("allreduce=butterfly,,barrier=flat_sequential");
    EXPECT_EQ(parsed.size(), 2u);
    EXPECT_EQ(parsed.at("barrier"), "flat_sequential");
}

// The level column: processes of one host over shared memory meet on the
// host board at every size (allreduce; barrier), where a crowded network
// takes the tree from 8 ranks (below 128 KiB), the butterfly at 4 (below
// 96 KiB), and Rabenseifner's above.
TEST(selection, the_table_chooses_by_link_level) {
    auto& s = cc::selection::global();
    using cc::link_level;
    EXPECT_EQ(s.choose(crowded({"allreduce", 8, 8, true, false, false, link_level::network})), "reduce_broadcast");
    EXPECT_EQ(s.choose({"allreduce", 8, 8, true, false, false, link_level::host}), "host_memory");
    EXPECT_EQ(s.choose({"allreduce", 8, 16 * 1024 - 1, true, false, false, link_level::host}), "host_memory");
    EXPECT_EQ(s.choose({"allreduce", 8, 16 * 1024, true, false, false, link_level::host}), "host_memory");
    EXPECT_EQ(s.choose({"allreduce", 8, 1 << 20, true, true, false, link_level::host}), "host_memory");
    EXPECT_EQ(s.choose(crowded({"allreduce", 8, 32 * 1024, true, false, false, link_level::network})),
              "reduce_broadcast");
    EXPECT_EQ(s.choose(crowded({"allreduce", 8, 65536, true, true, false, link_level::network})), "reduce_broadcast");
    EXPECT_EQ(s.choose(crowded({"allreduce", 4, 65536, true, true, false, link_level::network})), "butterfly");
    EXPECT_EQ(s.choose({"allreduce", 4, 1 << 20, true, true, false, link_level::network}), "rabenseifner");
    EXPECT_EQ(s.choose({"allreduce", 8, 8, true, false, true, link_level::host}), "shared_memory");
    EXPECT_EQ(s.choose({"broadcast", 2, 0, true, true, false, link_level::host}), "host_memory");
    EXPECT_EQ(s.choose({"broadcast", 2, 0, true, false, false, link_level::host}), "flat");  // not a vector
    EXPECT_EQ(s.choose({"broadcast", 8, 0, true, true, false, link_level::host}), "binomial");
    // broadcast_into, which knows the size at every rank: the board from 16 KiB.
    EXPECT_EQ(s.choose({"broadcast", 8, 16 * 1024 - 1, true, true, false, link_level::host}), "binomial");
    EXPECT_EQ(s.choose({"broadcast", 8, 16 * 1024, true, true, false, link_level::host}), "host_memory");
    EXPECT_EQ(s.choose({"broadcast", 4, 1 << 20, true, true, false, link_level::host}), "host_memory");
    EXPECT_EQ(s.choose({"broadcast", 8, 1 << 20, true, true, false, link_level::network}), "binomial");
    // scan and exscan: the board on a host from 64 KiB, and at every size at
    // 2 ranks, the chain below; a network keeps its choices.
    EXPECT_EQ(s.choose({"scan", 2, 8, false, true, false, link_level::host}), "host_memory");
    EXPECT_EQ(s.choose({"exscan", 2, 8, false, true, false, link_level::host}), "host_memory");
    EXPECT_EQ(s.choose({"scan", 3, 8, false, true, false, link_level::host}), "pipeline");
    EXPECT_EQ(s.choose({"scan", 2, 8, false, true, false, link_level::network}), "pipeline");
    EXPECT_EQ(s.choose({"scan", 8, 65536, false, true, false, link_level::host}), "host_memory");
    EXPECT_EQ(s.choose({"exscan", 8, 65536, false, true, false, link_level::host}), "host_memory");
    EXPECT_EQ(s.choose({"scan", 8, 8, false, true, false, link_level::host}), "pipeline");
    EXPECT_EQ(s.choose({"scan", 8, 65536, false, true, false, link_level::network}), "recursive_doubling");
    // reduce_scatter: the board on a host, for any op; a network keeps the ring / the tree.
    EXPECT_EQ(s.choose({"reduce_scatter", 8, 8, true, true, false, link_level::host}), "host_memory");
    EXPECT_EQ(s.choose({"reduce_scatter", 8, 1 << 20, false, true, false, link_level::host}), "host_memory");
    EXPECT_EQ(s.choose({"reduce_scatter", 8, 1 << 20, true, true, false, link_level::network}), "ring");
    EXPECT_EQ(s.choose({"barrier", 8, 0, true, false, false, link_level::host}), "host_memory");
    EXPECT_EQ(s.choose({"allgather", 8, 8, true, false, false, link_level::host}), "host_memory");
    EXPECT_EQ(s.choose({"reduce", 2, 8, true, false, false, link_level::host}), "host_memory");
    EXPECT_EQ(s.choose({"reduce", 8, 8, true, false, false, link_level::host}), "binomial_parallel");
    EXPECT_EQ(s.choose({"reduce", 8, 16384, true, true, false, link_level::host}), "binomial_parallel");
    EXPECT_EQ(s.choose({"reduce", 8, 8, true, false, false, link_level::network}), "arrival");
    EXPECT_EQ(s.choose({"reduce", 8, 65536, true, true, false, link_level::host}), "host_memory");
    EXPECT_EQ(s.choose({"reduce", 8, 65536, true, true, false, link_level::network}), "chain");
    EXPECT_EQ(s.choose({"allgather", 2, 1 << 20, true, false, false, link_level::host}), "host_memory");
    EXPECT_EQ(s.choose({"allgather", 8, 1 << 20, true, false, false, link_level::network}), "ring");
    EXPECT_EQ(s.choose({"barrier", 8, 0, true, false, false, link_level::network, true}), "flat_parallel");
    // A communicator that does not say is a network.
    EXPECT_EQ(s.choose({"allreduce", 8, 8, true, false, false, link_level::network, true}), "reduce_broadcast");
    std::ostringstream os;
    s.print_table(os);
    EXPECT_NE(os.str().find("allreduce       host_memory         any       any                 host"),
              std::string::npos)
        << os.str();
    EXPECT_EQ(os.str().find("allreduce       butterfly           any       >= 16384            host"),
              std::string::npos)
        << os.str();
}

TEST(selection, prints_the_effective_table) {
    forced_guard g;
    cc::selection::global().force("barrier", "flat_sequential");
    std::ostringstream os;
    cc::selection::global().print_table(os);
    const auto text = os.str();
    EXPECT_NE(text.find("allreduce       butterfly"), std::string::npos) << text;
    EXPECT_NE(text.find("forced: barrier = flat_sequential"), std::string::npos) << text;
    for (const auto& rule : cc::default_rules) EXPECT_NE(text.find(std::string(rule.algorithm)), std::string::npos);
}

TEST(registry, every_rule_of_the_table_names_a_registered_algorithm_and_every_collective_has_a_rule) {
    for (const auto& rule : cc::default_rules)
        EXPECT_TRUE(cc::selection::find(rule.collective, rule.algorithm).has_value())
            << rule.collective << " " << rule.algorithm;
    for (const auto& a : cc::registry::every_algorithm) {
        bool has_rule = false;
        for (const auto& rule : cc::default_rules) has_rule = has_rule || rule.collective == a.collective;
        EXPECT_TRUE(has_rule) << a.qualified();
    }
}

TEST(registry, names_are_unique_within_a_collective_and_dispatch_runs_each_by_name) {
    for (std::size_t i = 0; i < cc::registry::every_algorithm.size(); ++i)
        for (std::size_t j = i + 1; j < cc::registry::every_algorithm.size(); ++j)
            EXPECT_NE(cc::registry::every_algorithm[i].qualified(), cc::registry::every_algorithm[j].qualified());
    // Forcing each allreduce and barrier algorithm runs exactly that one;
    // one that needs a host level (these ranks are fibers, not processes of
    // a host) is not usable here, and the table's choice runs instead.
    forced_guard g;
    // A vector: the ring takes nothing else.
    auto allreduce = [](auto& c) { EXPECT_EQ(cc::allreduce(c, std::vector<int>{2}, cc::sum{})[0], 10); };
    auto barrier = [](auto& c) { cc::barrier(c); };
    const auto table_allreduce = algorithms_run(5, allreduce), table_barrier = algorithms_run(5, barrier);
    for (const auto& a : cc::registry::allreduce::infos) {
        cc::selection::global().force("allreduce", a.name);
        EXPECT_EQ(algorithms_run(5, allreduce), a.needs_host_level || a.needs_two_levels
                                                    ? table_allreduce
                                                    : std::vector<std::string>{"allreduce " + std::string(a.name)});
    }
    for (const auto& a : cc::registry::barrier::infos) {
        cc::selection::global().force("barrier", a.name);
        EXPECT_EQ(algorithms_run(5, barrier), a.needs_host_level || a.needs_two_levels
                                                  ? table_barrier
                                                  : std::vector<std::string>{"barrier " + std::string(a.name)});
    }
    csp::run([] {
        cc::run_local(1, [](cc::local_communicator& c) {
            EXPECT_THROW(cc::registry::reduce::run("quantum", c, 1, cc::sum{}, 0), csp::usage_error);
        });
    });
}

// allgather() asked the table without the value's size, so the size rules
// could not apply: each rank's part of 64 KiB goes round the ring, a small
// one through rank 0. A vector's size may differ between ranks, so the
// ranks agree on the largest first (one allreduce, on the shared board
// here); a part of fixed size needs no agreement.
TEST(selection, allgather_chooses_by_the_size_of_each_part) {
    cc::trace_log log;
    csp::run([&] {
        cc::run_local(3, [&](cc::local_communicator& c) {
            cc::traced tc(c, log);
            const std::vector<double> part(8192, c.rank());
            const auto all = cc::allgather(tc, part);
            ASSERT_EQ(all.size(), 3u);
            for (int r = 0; r < 3; ++r) EXPECT_EQ(all[static_cast<std::size_t>(r)], std::vector<double>(8192, r));
        });
    });
    // Every rank's entries. A part of 64 KiB is not small: the choice for
    // small parts carries only the sizes, then all take the ring by them.
    // Each rank announces its first call before the meeting that every rank
    // must reach, so all three come first.
    EXPECT_EQ(entries_of(log, "allgather"), (std::vector<std::string>{"allgather gather_broadcast",
                                                                      "allgather gather_broadcast",
                                                                      "allgather gather_broadcast", "allgather ring",
                                                                      "allgather ring", "allgather ring"}));
    EXPECT_EQ(algorithms_run(3, [](auto& c) { EXPECT_EQ(cc::allgather(c, c.rank()).at(2), 2); }),
              std::vector<std::string>{"allgather gather_broadcast"});
}

// Small parts whose sizes differ cost one call, as parts of one size do:
// the first call, which carries each part with its size, was the whole
// allgather (before, every such call first allreduced the largest size).
TEST(selection, an_allgather_of_small_parts_of_different_sizes_is_one_call) {
    cc::trace_log log;
    csp::run([&] {
        cc::run_local(3, [&](cc::local_communicator& c) {
            cc::traced tc(c, log);
            const auto all = cc::allgather(tc, std::vector<int>(static_cast<std::size_t>(c.rank()) * 100, c.rank()));
            ASSERT_EQ(all.size(), 3u);
            for (int r = 0; r < 3; ++r) EXPECT_EQ(all[static_cast<std::size_t>(r)], std::vector<int>(r * 100, r));
            const auto words = cc::allgather(tc, std::string(static_cast<std::size_t>(c.rank()) + 1, 'w'));
            EXPECT_EQ(words, (std::vector<std::string>{"w", "ww", "www"}));
        });
    });
    EXPECT_EQ(entries_of(log, "allgather"), std::vector<std::string>(6, "allgather gather_broadcast"));
}

// Parts of 60 and 70 KiB: by its own size half the ranks would take the
// ring and half gather_broadcast, and each half waited for messages the
// other never sent (the runtime's deadlock report). They agree on 70 KiB.
TEST(selection, allgather_of_parts_whose_sizes_straddle_a_rules_bound_agrees_on_one_algorithm) {
    const std::size_t small = 60 * 1024 / 8, large = 70 * 1024 / 8;
    auto part = [&](int r) { return std::vector<double>(r < 2 ? small : large, r); };
    std::atomic<int> right{0};
    csp::run([&] {
        cc::run_local(4, [&](cc::local_communicator& c) {
            const auto all = cc::allgather(c, part(c.rank()));
            ASSERT_EQ(all.size(), 4u);
            for (int r = 0; r < 4; ++r) EXPECT_EQ(all[static_cast<std::size_t>(r)], part(r)) << "part " << r;
            ++right;
            // Strings likewise, around the same bound.
            const auto words = cc::allgather(c, std::string(c.rank() % 2 == 0 ? 60000 : 70000, 'a'));
            EXPECT_EQ(words.at(3).size(), 70000u);
        });
    });
    EXPECT_EQ(right.load(), 4);
}

// Whether a request's choice could differ by its size alone: alike at
// every rank, since it reads nothing else the ranks may not share.
TEST(selection, a_choice_depends_on_the_size_only_where_a_rule_bound_splits_it) {
    forced_guard guard;
    auto& s = cc::selection::global();
    const auto rules = cc::detail::rules_of("allgather");
    EXPECT_TRUE(s.depends_on_bytes({"allgather", 8, 100, true}, rules));  // ring from 64 KiB
    EXPECT_EQ(s.first_change({"allgather", 8, 100, true}, rules), 64u * 1024);
    EXPECT_EQ(s.first_change({"allgather", 8, 1 << 20, true}, rules), 64u * 1024);  // whatever the size asked
    cc::selection::request host{"allgather", 8, 100, true};
    host.level = cc::link_level::host;  // the host board at every size
    EXPECT_FALSE(s.depends_on_bytes(host, rules));
    EXPECT_EQ(s.first_change(host, rules), cc::no_limit);
    EXPECT_FALSE(s.depends_on_bytes({"scatter", 8, 100, true}, cc::detail::rules_of("scatter")));
    s.force("allgather", "ring");
    EXPECT_FALSE(s.depends_on_bytes({"allgather", 8, 100, true}, rules));
}

TEST(selection, every_collective_by_plain_name) {
    csp::run([] {
        cc::run_local(7, [](cc::local_communicator& c) {
            const int me = c.rank();
            EXPECT_EQ(cc::broadcast(c, me == 3 ? 42 : 0, 3), 42);
            auto r = cc::reduce(c, me, cc::sum{}, 6);
            EXPECT_EQ(r.has_value(), me == 6);
            if (r) { EXPECT_EQ(*r, 21); }
            EXPECT_EQ(cc::allreduce(c, me, cc::maximum{}), 6);
            cc::barrier(c);
            auto g = cc::gather(c, me * 2, 1);
            if (me == 1) { EXPECT_EQ(g->at(6), 12); }
            EXPECT_EQ(cc::allgather(c, me).at(4), 4);
            EXPECT_EQ(cc::scatter(c, me == 0 ? std::vector<int>{0, 10, 20, 30, 40, 50, 60} : std::vector<int>{}),
                      me * 10);
            EXPECT_EQ(cc::alltoall(c, std::vector<int>(7, me)), std::vector<int>({0, 1, 2, 3, 4, 5, 6}));
            EXPECT_EQ(cc::scan(c, 1, cc::sum{}), me + 1);
            EXPECT_EQ(cc::exscan(c, 1, cc::sum{}).value_or(0), me);
        });
    });
}

// The README's printed table had lost the scan and exscan rules for two
// ranks on a host board: it is the table print_table() prints, line for line.
TEST(selection, readme_table_is_the_printed_table) {
    std::ostringstream os;
    cc::selection::global().print_table(os);
    std::ifstream in(CSP_SOURCE_DIR "/README.md");
    ASSERT_TRUE(in) << "README.md not found under " << CSP_SOURCE_DIR;
    const std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string header = "collective      algorithm";
    const auto begin = readme.find(header);
    ASSERT_NE(begin, std::string::npos) << "the README shows no selection table";
    const auto end = readme.find("```", begin);
    ASSERT_NE(end, std::string::npos);
    EXPECT_EQ(readme.substr(begin, end - begin), os.str());
}
