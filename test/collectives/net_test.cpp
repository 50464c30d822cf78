// The grid over the network: one OS process per rank under csp-launch.
#include <gtest/gtest.h>

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace {

struct run_result {
    int status;
    std::string output;
};

run_result launch(int n, const std::string& env = "", const std::string& args = "") {
    const std::string cmd =
        env + " " CSP_LAUNCH " -n " + std::to_string(n) + " " COLLECTIVES_NET_PEER " " + args + " 2>&1";
    run_result r{-1, {}};
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) return r;
    char buf[4096];
    while (std::size_t k = std::fread(buf, 1, sizeof buf, p)) r.output.append(buf, k);
    r.status = ::pclose(p);
    return r;
}

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t c = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++c;
    return c;
}

// The lines of `text` that hold `what`.
std::vector<std::string> lines_with(const std::string& text, const std::string& what) {
    std::vector<std::string> lines;
    for (std::size_t at = 0; at < text.size();) {
        const auto end = std::min(text.find('\n', at), text.size());
        if (const auto hit = text.find(what, at); hit < end) lines.push_back(text.substr(at, end - at));
        at = end + 1;
    }
    return lines;
}

// Runs net_peer's `mode` on n ranks and expects the job to succeed with each
// rank saying `ok` once.
void expect_each_rank_says(int n, const std::string& mode, const std::string& ok) {
    auto r = launch(n, "", mode);
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(count(r.output, ok), static_cast<std::size_t>(n)) << r.output;
}

}  // namespace

class net_grid : public ::testing::TestWithParam<int> {};

TEST_P(net_grid, every_algorithm_and_root_over_tcp) {
    expect_each_rank_says(GetParam(), "", "grid ok");
}

INSTANTIATE_TEST_SUITE_P(ranks, net_grid, ::testing::Values(1, 2, 3, 5));

// The table keys some rules on whether the job's ranks outnumber their CPUs
// (selection.hpp, crowding): csp-launch tells every node alike, so a job
// held to one CPU takes the crowded rules at every rank, and a job with a
// CPU per rank the others. A barrier of 5 and an allreduce of 32 KiB differ
// (over TCP: processes of one host over UCX meet on the host board).
TEST(net_grid_selection, a_job_on_fewer_cpus_than_ranks_takes_the_crowded_rules) {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    ASSERT_EQ(::sched_getaffinity(0, sizeof mask, &mask), 0);
    int first = 0;
    while (!CPU_ISSET(first, &mask)) ++first;
    auto held = launch(5, "CSP_TRANSPORT=tcp taskset -c " + std::to_string(first), "choices");
    EXPECT_EQ(held.status, 0) << held.output;
    EXPECT_EQ(count(held.output, "crowded=1 barrier flat_parallel allreduce reduce_broadcast"), 5u) << held.output;
    if (CPU_COUNT(&mask) >= 2) {
        auto spread = launch(2, "CSP_TRANSPORT=tcp", "choices");
        EXPECT_EQ(spread.status, 0) << spread.output;
        EXPECT_EQ(count(spread.output, "crowded=0 barrier dissemination allreduce butterfly"), 2u) << spread.output;
    }
}

TEST(net_grid_selection, the_environment_forces_an_algorithm_in_every_rank) {
    auto r = launch(3, "CSP_COLLECTIVES=allreduce=reduce_broadcast,barrier=flat_sequential");
    EXPECT_EQ(r.status, 0) << r.output;
    auto bad = launch(2, "CSP_COLLECTIVES=barrier=nonesuch");
    EXPECT_NE(bad.status, 0);
    EXPECT_NE(bad.output.find("\"nonesuch\""), std::string::npos) << bad.output;
}

// Shared reduction variables over the network (net_peer.cpp: check_shared).
class net_shared : public ::testing::TestWithParam<int> {};

TEST_P(net_shared, variables_fuse_their_updates_and_match_sequential_results) {
    expect_each_rank_says(GetParam(), "shared", "shared ok");
}

INSTANTIATE_TEST_SUITE_P(ranks, net_shared, ::testing::Values(1, 2, 3, 5, 8));

// A hybrid job (hybrid_communicator.hpp): n nodes holding 2 or 3 ranks each
// as fibers; the grid over all of them.
class net_hybrid : public ::testing::TestWithParam<int> {};

TEST_P(net_hybrid, every_algorithm_over_fibers_of_several_nodes) {
    expect_each_rank_says(GetParam(), "hybrid", "hybrid ok");
}

INSTANTIATE_TEST_SUITE_P(nodes, net_hybrid, ::testing::Values(1, 2, 3));

// The hybrid grid with the same number of fibers on every node: 2 nodes of 3
// fibers and 3 nodes of 2 (six ranks either way, split the two ways round).
class net_hybrid_even : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(net_hybrid_even, every_algorithm_over_nodes_of_equal_fibers) {
    const auto [nodes, fibers] = GetParam();
    expect_each_rank_says(nodes, "hybrid " + std::to_string(fibers), "hybrid ok");
}

INSTANTIATE_TEST_SUITE_P(nodes_x_fibers, net_hybrid_even,
                         ::testing::Values(std::pair{2, 3}, std::pair{3, 2}),
                         [](const auto& info) {
                             return std::to_string(info.param.first) + "x" + std::to_string(info.param.second);
                         });

// A rank of a hybrid job that throws fails every rank of every node (its
// own node's at once, the others' when its node leaves): no rank hangs.
TEST(net_hybrid_failure, a_throwing_fiber_fails_every_rank_of_every_node) {
    auto r = launch(3, "", "hybrid-fail");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(count(r.output, "hybrid failure: "), 3u) << r.output;
    EXPECT_EQ(count(r.output, "hybrid failure: none"), 0u) << r.output;
    EXPECT_GE(count(r.output, "rank 1 gave up"), 1u) << r.output;
}

// Regression: rank 0 broadcast where ranks 1 and 2 made an allreduce, and
// the allreduce took the broadcast's message as rank 0's part (over TCP
// every rank printed 9, for 7 + 1 + 1; on the host board rank 0's next
// allreduce met the others' first). No rank gets an answer now, and none
// waits for the job-wide deadlock report (which ended it before): passing
// messages, a tag says which collective drew it, and a receive for whose
// call the broadcast's message came throws at once, naming both, and
// revokes the stream at every rank; on the host board, each meeting
// compares the ranks' calls. A rank that did not meet the other call
// itself is refused with the revocation, or with the departure of a rank
// that did and has finished.
TEST(net_mismatched_calls, different_collectives_at_one_place_give_no_answer_and_are_named) {
    for (const std::string transport : {"", "CSP_TRANSPORT=tcp"}) {
        auto r = launch(3, transport, "mismatched-calls");
        EXPECT_EQ(count(r.output, "answer "), 0u) << r.output;
        EXPECT_EQ(lines_with(r.output, "refused: ").size(), 3u) << r.output;
        EXPECT_GE(lines_with(r.output, " met this call with ").size(), 1u) << r.output;
        EXPECT_GE(count(r.output, "every rank must make the same collective calls in the same order"), 1u) << r.output;
        EXPECT_EQ(count(r.output, "deadlock in job"), 0u) << r.output;
    }
    auto r = launch(3, "CSP_TRANSPORT=tcp", "mismatched-calls");
    EXPECT_GE(count(r.output, " met this call with a call of broadcast by "), 1u) << r.output;
}

// The same with an allgather against an allreduce: on the host board the
// meeting names the other collective; passing messages, the allgather (a
// gather, then a broadcast) draws more tags than the allreduce, its
// messages come under other call numbers, and the job-wide deadlock report
// ends it. The report reaches every node at about the same time, but a
// node that took it closes at once, and a rank still waiting for that node
// may hear of its departure first: that rank is refused with the departure
// (observed under a loaded suite), never with an answer.
TEST(net_mismatched_calls, an_allgather_against_an_allreduce_gives_no_answer) {
    for (const std::string transport : {"", "CSP_TRANSPORT=tcp"}) {
        auto r = launch(3, transport, "mismatched-calls-board");
        EXPECT_EQ(count(r.output, "answer "), 0u) << r.output;
        EXPECT_EQ(count(r.output, "refused: "), 3u) << r.output;
        const bool on_board = count(r.output, " met this call with ") >= 1;
        const auto reported = count(r.output, "refused: deadlock in job");
        const bool deadlock = reported >= 1 && reported + count(r.output, "has left (it closed its node)") == 3;
        EXPECT_TRUE(on_board || deadlock) << r.output;
    }
}

// Regression: ranks whose vectors for one element-wise allreduce had
// lengths on either side of a bound of the selection table chose different
// algorithms, and one algorithm took the other's blocks as whole values:
// over TCP at 4 ranks, rank 0 with 16,384 doubles and the others with
// 8,192, rank 2 printed "answer 8192 3" and the others waited. Now a tag
// carries the algorithm, and no rank gets an answer nor waits for the
// job-wide deadlock report (as they did before): a rank that meets the
// other algorithm's message throws, at once, an error that says the ranks
// chose different algorithms and why, and the others are refused with its
// revocation or its departure. Both at the sizes that were wrong and at the
// table's first bound for this job.
TEST(net_mismatched_calls, ranks_whose_sizes_choose_different_algorithms_get_no_answer_and_are_told_why) {
    for (const std::string sizes : {"16384 8192", ""}) {
        auto r = launch(4, "CSP_TRANSPORT=tcp", "mismatched-sizes " + sizes);
        EXPECT_EQ(count(r.output, "answer "), 0u) << r.output;
        EXPECT_EQ(lines_with(r.output, "refused: ").size(), 4u) << r.output;
        EXPECT_GE(lines_with(r.output, " met this call with allreduce by ").size(), 1u) << r.output;
        EXPECT_GE(count(r.output, "the ranks chose different algorithms for one call"), 1u) << r.output;
        EXPECT_EQ(count(r.output, "deadlock in job"), 0u) << r.output;
    }
}

// Regression: input only one rank could see was wrong (a scatter root's
// values, one rank's alltoall values, vectors of different lengths that only
// the reduce_scatter's root folds). That rank threw; the others waited for
// its messages until it left, or for ever if it went on. Now its error
// reaches every rank of the call, each names the rank and the call, and
// the stream is revoked at every rank; another stream still works. Over
// TCP: on one host over UCX the later allreduce meets on the host board,
// which pairs calls by their numbers, not through the mailbox.
class net_bad_input : public ::testing::TestWithParam<std::string> {};

TEST_P(net_bad_input, one_ranks_bad_input_fails_the_call_on_every_rank_and_revokes_the_stream) {
    auto r = launch(4, "CSP_TRANSPORT=tcp", "bad-input-" + GetParam());
    EXPECT_EQ(count(r.output, "answer"), 0u) << r.output;
    EXPECT_EQ(count(r.output, "] failed: "), 4u) << r.output;
    const std::string bad_rank = GetParam() == "alltoall"           ? "rank 1's alltoall"
                                 : GetParam() == "scatter_parallel" ? "rank 0's scatter"
                                                                    : "rank 0's " + GetParam();
    EXPECT_EQ(count(r.output, "] failed: " + bad_rank + " (call 0 of stream 0) failed: "), 3u) << r.output;
    // A later receive of the stream fails unless its message is already
    // there (a rank may have sent it before it heard of the failure), and
    // then the answer is right: never a wrong one, never a wait.
    const auto revoked = count(r.output, "same stream revoked");
    EXPECT_GE(revoked, 1u) << r.output;
    EXPECT_EQ(revoked + count(r.output, "same stream 4"), 4u) << r.output;
    EXPECT_EQ(count(r.output, "other stream 4"), 4u) << r.output;
}

INSTANTIATE_TEST_SUITE_P(calls, net_bad_input,
                         ::testing::Values("scatter", "scatter_parallel", "alltoall", "reduce_scatter"));

// The host board (processes of one host meeting in shared memory; under
// CSP_TRANSPORT=tcp the ranks do not share it and the same calls pass
// messages): every sum of 2,000 rounds with late ranks, rank order, vectors,
// a vector too large for a part, lengths and types that differ at every
// rank, barrier ordering, no wake message left over (net_peer.cpp).
class net_host_board : public ::testing::TestWithParam<int> {};

TEST_P(net_host_board, meetings_count_every_value_and_keep_rank_order) {
    expect_each_rank_says(GetParam(), "host-board", "host ok");
}

INSTANTIATE_TEST_SUITE_P(ranks, net_host_board, ::testing::Values(1, 2, 3, 5));

// Hosts of two ranks in a job on one machine (net_peer.cpp host-groups):
// a hierarchy's host groups meet on boards of their own over UCX, pass
// messages over TCP, and every collective inside them and every
// hierarchical one counts its values. A plain split of a job on one host
// has boards too.
class net_host_groups : public ::testing::TestWithParam<int> {};

TEST_P(net_host_groups, meet_on_boards_of_their_own_and_count_every_value) {
    expect_each_rank_says(GetParam(), "host-groups", "groups ok");
}

TEST_P(net_host_groups, of_a_job_on_one_host_meet_on_boards_of_their_own) {
    expect_each_rank_says(GetParam(), "split-groups", "groups ok");
}

INSTANTIATE_TEST_SUITE_P(ranks, net_host_groups, ::testing::Values(2, 4, 5));

// A rank lost in the middle of its host group's meetings: its host mate
// fails with its error; the other host's group, whose members are all
// there, completes its loop of sums and fails only in the barrier of the
// whole job after it (net_peer.cpp host-groups-lost).
TEST(net_host_groups_faults, a_lost_rank_fails_its_host_group_and_no_other) {
    auto r = launch(4, "", "host-groups-lost");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(count(r.output, "outcome: "), 3u) << r.output;
    EXPECT_EQ(count(r.output, "[2] outcome: in the loop: lost node 3"), 1u) << r.output;
    EXPECT_EQ(count(r.output, "outcome: after the loop: "), 2u) << r.output;
}

// Regression: broadcast_host_memory copied a plain value (not a vector) out
// of the root's part without asking whether it fit there, so a value over a
// part arrived as whatever lay beyond the part.
TEST(net_host_board_values, a_plain_value_over_a_part_is_broadcast_whole) {
    expect_each_rank_says(3, "host-board-plain-over-a-part", "host ok");
}

// A rank that vanishes (no goodbye) while the others meet: each other rank
// fails with the lost peer's error instead of waiting for it for ever.
static void expect_every_other_rank_lost_node_3(const std::string& mode) {
    auto r = launch(4, "", mode);
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(count(r.output, "lost: "), 3u) << r.output;
    EXPECT_EQ(count(r.output, "lost: nothing"), 0u) << r.output;
    // Each names the lost rank, or a rank that failed and left before it.
    EXPECT_GE(count(r.output, "lost: lost node 3") + count(r.output, "lost: node 3"), 1u) << r.output;
}

TEST(net_host_board_faults, a_rank_lost_mid_loop_fails_the_meeting_on_every_other_rank) {
    expect_every_other_rank_lost_node_3("host-board-lost");
}

// The same on the large board: a rank lost between two chunks' meetings.
TEST(net_host_board_faults, a_rank_lost_mid_large_allreduce_fails_it_on_every_other_rank) {
    expect_every_other_rank_lost_node_3("host-board-lost-large");
}

// And in a reduce_scatter's slices on the large board.
TEST(net_host_board_faults, a_rank_lost_mid_large_reduce_scatter_fails_it_on_every_other_rank) {
    expect_every_other_rank_lost_node_3("host-board-lost-scatter");
}

// Regression (example_pi_4_nodes failed with the host board): a rank that
// slept in the last barrier failed with "node 0 has left" when rank 0 left
// right after it, before the wake from another rank came; a departure
// after every rank arrived ends the sleep like the wake would.
TEST(net_host_board_faults, a_rank_that_leaves_after_the_last_meeting_fails_no_sleeper) {
    for (int i = 0; i < 5; ++i) {
        auto r = launch(4, "", "host-board-leave");
        ASSERT_EQ(r.status, 0) << r.output;
        ASSERT_EQ(count(r.output, "left ok"), 4u) << r.output;
    }
}

// A rank that never comes to the meeting: the others sleep in a receive, so
// the job-wide deadlock report ends the job instead of a silent hang.
TEST(net_host_board_faults, a_rank_that_never_arrives_is_a_reported_deadlock) {
    auto r = launch(3, "", "host-board-deadlock");
    EXPECT_NE(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("deadlock"), std::string::npos) << r.output;
}
