// csp-launch starting nodes as OS processes.
#include <sched.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

// Runs a shell command; returns its exit status and output (stdout and stderr).
int run(const std::string& command, std::string& output) {
    FILE* p = ::popen((command + " 2>&1").c_str(), "r");
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) output += buf;
    const int status = ::pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// "[r] ", the launcher's prefix of rank r's lines. Built by appending: GCC
// 12 warns falsely (-Wstringop-overflow) about "[" + std::to_string(r) at -O3.
std::string rank_prefix(int r) {
    std::string p = "[";
    p += std::to_string(r);
    p += "] ";
    return p;
}

TEST(net_launcher, runs_a_ring_of_four_processes) {
    std::string out;
    EXPECT_EQ(run(std::string(CSP_LAUNCH) + " -n 4 " + RING_EXAMPLE + " 5", out), 0) << out;
    EXPECT_NE(out.find("4 nodes, 5 laps: token 30, expected 30"), std::string::npos) << out;
    for (int r = 0; r < 4; ++r) EXPECT_NE(out.find("node " + std::to_string(r) + " of 4"), std::string::npos) << out;
    EXPECT_EQ(out.find("csp.net"), std::string::npos) << "a fault was logged:\n" << out;
}

TEST(net_launcher, gives_each_node_its_rank_size_job_and_token) {
    std::string out;
    EXPECT_EQ(run(std::string(CSP_LAUNCH) + " -n 3 --job envjob --token tok sh -c "
                  "'echo \"$CSP_RANK/$CSP_SIZE/$CSP_LOCAL_SIZE $CSP_JOB $CSP_TOKEN ${CSP_NAMESERVER%:*}\"'",
                  out),
              0)
        << out;
    for (int r = 0; r < 3; ++r)
        EXPECT_NE(out.find(std::to_string(r) + "/3/3 envjob tok 127.0.0.1"), std::string::npos) << out;
}

// --transport reaches every node as CSP_TRANSPORT, and a ring runs on each.
TEST(net_launcher, transport_flag_sets_each_nodes_transport) {
    std::string out;
    EXPECT_EQ(run(std::string(CSP_LAUNCH) + " -n 2 --transport tcp sh -c 'echo \"$CSP_RANK:$CSP_TRANSPORT\"'", out), 0)
        << out;
    EXPECT_NE(out.find("0:tcp"), std::string::npos) << out;
    EXPECT_NE(out.find("1:tcp"), std::string::npos) << out;
    for (const char* t : {"tcp", "auto"}) {
        out.clear();
        EXPECT_EQ(run(std::string(CSP_LAUNCH) + " -n 3 --transport " + t + " " + RING_EXAMPLE + " 3", out), 0) << out;
        EXPECT_NE(out.find("3 nodes, 3 laps"), std::string::npos) << t << ": " << out;
        EXPECT_EQ(out.find("csp.net"), std::string::npos) << t << ": a fault was logged:\n" << out;
    }
    out.clear();
    EXPECT_EQ(run(std::string(CSP_LAUNCH) + " -n 2 --transport carrier-pigeon true", out), 2);
    EXPECT_NE(out.find("--transport carrier-pigeon: use auto, tcp or ucx"), std::string::npos) << out;
}

// Regression: csp-launch gave each child its rank with setenv while its own
// nameserver's thread read the environment (getenv), a data race that
// crashed it under ASan (SEGV in getenv). The children's environments are
// now built apart and the launcher's own is never changed. Many children,
// many times: each must start with its own rank and the job's variables.
TEST(net_launcher, starting_many_nodes_never_races_the_nameserver_on_the_environment) {
    for (int round = 0; round < 10; ++round) {
        std::string out;
        ASSERT_EQ(run(std::string(CSP_LAUNCH) + " -n 12 --transport tcp sh -c 'echo \"r=$CSP_RANK s=$CSP_SIZE t=$CSP_TRANSPORT\"'",
                      out),
                  0)
            << out;
        for (int r = 0; r < 12; ++r)
            EXPECT_NE(out.find("r=" + std::to_string(r) + " s=12 t=tcp"), std::string::npos) << out;
    }
}

TEST(net_launcher, a_failing_node_stops_the_job_and_sets_the_exit_status) {
    std::string out;
    EXPECT_EQ(run(std::string(CSP_LAUNCH) + " -n 3 sh -c 'if [ $CSP_RANK = 1 ]; then exit 7; fi; exec sleep 30'", out), 7)
        << out;
    EXPECT_NE(out.find("rank 1 of job"), std::string::npos) << out;
    EXPECT_NE(out.find("exited with status 7"), std::string::npos) << out;
}

TEST(net_launcher, bad_arguments_are_named) {
    std::string out;
    EXPECT_EQ(run(std::string(CSP_LAUNCH) + " -n 0 true", out), 2);
    EXPECT_NE(out.find("-n N"), std::string::npos) << out;
    out.clear();
    EXPECT_EQ(run(std::string(CSP_LAUNCH) + " -n 2", out), 2);
    EXPECT_NE(out.find("no program"), std::string::npos) << out;
}

// Each rank's CPUs, from lines "<rank> <taskset's list>" that `command`
// prints through csp-launch (one per rank).
std::map<int, std::string> cpus_of_ranks(const std::string& options, std::string& out, const std::string& wrap = "") {
    std::map<int, std::string> cpus;
    EXPECT_EQ(run(wrap + CSP_LAUNCH + " " + options +
                      " --no-prefix sh -c 'echo \"$CSP_RANK $(taskset -pc $$ | sed \"s/.*: //\")\"'",
                  out),
              0)
        << out;
    std::istringstream lines(out);
    int rank;
    std::string list;
    while (lines >> rank >> list) cpus[rank] = list;
    return cpus;
}

std::vector<int> cpus_of_this_process() {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    EXPECT_EQ(::sched_getaffinity(0, sizeof mask, &mask), 0);
    std::vector<int> cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &mask)) cpus.push_back(c);
    return cpus;
}

// --bind-to cpu pins each rank to one CPU of the launcher's, every CPU
// used once before any is used twice, round robin (rank r and rank r + m,
// m CPUs, share one), as mpirun --map-by core --bind-to core does.
TEST(net_launcher, bind_to_cpu_pins_each_rank_to_one_cpu_round_robin) {
    const std::vector<int> mine = cpus_of_this_process();
    const int m = static_cast<int>(mine.size());
    const int n = 2 * m + 1;
    std::string out;
    const auto cpus = cpus_of_ranks("-n " + std::to_string(n) + " --bind-to cpu", out);
    ASSERT_EQ(static_cast<int>(cpus.size()), n) << out;
    std::set<std::string> first_round;
    for (const auto& [rank, list] : cpus) {
        const int cpu = std::stoi(list);
        EXPECT_EQ(list, std::to_string(cpu)) << "rank " << rank << " may run on more than one CPU: " << out;
        EXPECT_NE(std::find(mine.begin(), mine.end(), cpu), mine.end()) << "rank " << rank << ": " << out;
        if (rank < m) first_round.insert(list);
        else EXPECT_EQ(list, cpus.at(rank - m)) << "rank " << rank << ": " << out;
    }
    EXPECT_EQ(static_cast<int>(first_round.size()), m) << "a CPU was used twice before every CPU was used once: " << out;
}

// Without it a rank may run wherever the launcher may; a launcher held to
// one CPU binds every rank there.
TEST(net_launcher, bind_to_cpu_stays_within_the_launchers_cpus) {
    const std::vector<int> mine = cpus_of_this_process();
    std::string out;
    for (const auto& [rank, list] : cpus_of_ranks("-n 2", out)) {
        // taskset prints ranges ("0-3") or lists ("0,2"): compare as a set
        // by asking taskset for this process's own list the same way.
        std::string own;
        EXPECT_EQ(run("taskset -pc $$ | sed 's/.*: //'", own), 0);
        own.erase(own.find_last_not_of('\n') + 1);
        EXPECT_EQ(list, own) << "rank " << rank << " was bound without --bind-to: " << out;
    }
    out.clear();
    const std::string last = std::to_string(mine.back());
    const auto held = cpus_of_ranks("-n 3 --bind-to cpu", out, "taskset -c " + last + " ");
    ASSERT_EQ(held.size(), 3u) << out;
    for (const auto& [rank, list] : held) EXPECT_EQ(list, last) << "rank " << rank << ": " << out;
    out.clear();
    EXPECT_EQ(run(std::string(CSP_LAUNCH) + " -n 2 --bind-to core true", out), 2);
    EXPECT_NE(out.find("--bind-to core: use cpu or none"), std::string::npos) << out;
}

// Regression: a node judged its host oversubscribed by the host's hardware
// threads, so a job held to fewer CPUs (taskset, a cpuset, a batch
// allocation) spun on cores its other ranks needed. csp-launch now tells
// each node the CPUs it may use itself (CSP_LOCAL_CPUS), and 2 ranks held
// to one CPU know they share it.
TEST(net_launcher, a_job_held_to_fewer_cpus_than_ranks_knows_it_is_oversubscribed) {
    const std::vector<int> mine = cpus_of_this_process();
    std::string out;
    EXPECT_EQ(run("taskset -c " + std::to_string(mine.front()) + " " + CSP_LAUNCH + " -n 2 sh -c 'echo \"cpus=$CSP_LOCAL_CPUS\"; exec " +
                      NET_TEST_PEER + " oversubscribed'",
                  out),
              0)
        << out;
    EXPECT_NE(out.find("[0] cpus=1"), std::string::npos) << out;
    EXPECT_NE(out.find("[0] oversubscribed 0 1"), std::string::npos) << out;
    EXPECT_NE(out.find("[1] oversubscribed 1 1"), std::string::npos) << out;
    if (mine.size() >= 2) {
        out.clear();
        EXPECT_EQ(run(std::string(CSP_LAUNCH) + " -n 2 sh -c 'echo \"cpus=$CSP_LOCAL_CPUS\"; exec " + NET_TEST_PEER +
                          " oversubscribed'",
                      out),
                  0)
            << out;
        EXPECT_NE(out.find("[0] cpus=" + std::to_string(mine.size())), std::string::npos) << out;
        EXPECT_NE(out.find("[0] oversubscribed 0 0"), std::string::npos) << out;
        EXPECT_NE(out.find("[1] oversubscribed 1 0"), std::string::npos) << out;
    }
}

// Regression: a job whose nodes waited for each other hung silently for ever
// under csp-launch. Now the launcher prints the job-wide report, each node
// fails with it, and the launcher's status is not 0.
TEST(net_launcher, a_job_wide_deadlock_is_reported_and_ends_the_job) {
    std::string out;
    const auto start = std::chrono::steady_clock::now();
    const int status = run(std::string(CSP_LAUNCH) + " -n 3 --transport tcp " + NET_TEST_PEER + " crossed", out);
    EXPECT_NE(status, 0) << out;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20)) << out;
    EXPECT_NE(out.find("csp-launch: deadlock in job"), std::string::npos) << out;
    for (int r = 0; r < 3; ++r)
        EXPECT_NE(out.find("node " + std::to_string(r) + ": process 'main' is blocked reading from channel 'port 3 of node " +
                           std::to_string(r) + "'"),
                  std::string::npos)
            << out;
    // Each node's own error, under its rank's prefix.
    for (int r = 0; r < 3; ++r) EXPECT_NE(out.find(rank_prefix(r) + "waiting for node"), std::string::npos) << out;
}

TEST(net_launcher, each_line_is_prefixed_with_its_rank_unless_asked_not_to) {
    std::string out;
    EXPECT_EQ(run(std::string(CSP_LAUNCH) + " -n 2 sh -c 'echo one; echo two >&2; printf three'", out), 0) << out;
    for (int r = 0; r < 2; ++r)
        for (const char* line : {"one", "two", "three"})
            EXPECT_NE(out.find(rank_prefix(r) + line + "\n"), std::string::npos) << out;
    out.clear();
    EXPECT_EQ(run(std::string(CSP_LAUNCH) + " -n 2 --no-prefix sh -c 'echo plain'", out), 0) << out;
    EXPECT_EQ(out, "plain\nplain\n");
}

// The benchmark scripts read their figures from csp-launch's output, so
// every launch in them must ask for lines without the [rank] prefix (they
// matched nothing, and shared_vs_mpi failed, when the prefix came in).
TEST(net_launcher, the_bench_scripts_launch_without_the_rank_prefix) {
    std::size_t launches = 0;
    for (const auto& entry : std::filesystem::directory_iterator(std::string(CSP_SOURCE_DIR) + "/bench")) {
        if (!entry.is_regular_file() || entry.path().has_extension()) continue;  // scripts have none
        std::ifstream in(entry.path());
        int n = 0;
        for (std::string line; std::getline(in, line);) {
            ++n;
            if (line.find("build/tools/csp-launch -n") == std::string::npos) continue;
            ++launches;
            EXPECT_NE(line.find("--no-prefix"), std::string::npos)
                << entry.path().filename().string() << ":" << n << " launches without --no-prefix: " << line;
        }
    }
    EXPECT_GE(launches, 5u);  // the scan found the scripts
}

TEST(net_launcher, a_job_past_its_timeout_is_stopped_with_status_124) {
    std::string out;
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(run(std::string(CSP_LAUNCH) + " -n 2 --timeout 1 " + NET_TEST_PEER + " busy 60000", out), 124) << out;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << out;
    EXPECT_NE(out.find("still running after 1 s; stopping it"), std::string::npos) << out;
    out.clear();
    EXPECT_EQ(run(std::string(CSP_LAUNCH) + " -n 1 --timeout 0 true", out), 2);
    EXPECT_NE(out.find("--timeout needs a whole number of seconds"), std::string::npos) << out;
}

}  // namespace

// Not a deadlock (node 0 computes), so only the timeout ends it, and then
// the job says what every process was doing.
TEST(net_launcher, a_timeout_prints_what_every_process_of_every_node_is_doing) {
    std::string out;
    EXPECT_EQ(run(std::string(CSP_LAUNCH) + " -n 3 --timeout 2 " + NET_TEST_PEER + " stuck", out), 124) << out;
    EXPECT_NE(out.find("still running after 2 s; stopping it. Its processes:"), std::string::npos) << out;
    for (int r = 1; r < 3; ++r)
        EXPECT_NE(out.find("node " + std::to_string(r) + ": process 'main' is blocked reading from channel 'port 3"), std::string::npos)
            << out;
    // Node 0's computing process keeps its runtime from ever idling, or,
    // sampled between two slices, is ready to run; its other process waits.
    const bool busy = out.find("node 0: busy: a process kept computing") != std::string::npos;
    const bool ready = out.find("node 0: process 'computing' is ready to run") != std::string::npos;
    EXPECT_TRUE(busy || ready) << out;
    if (ready) {
        EXPECT_NE(out.find("node 0: process 'waiting' is blocked"), std::string::npos) << out;
    }
    EXPECT_EQ(out.find("deadlock"), std::string::npos) << out;
}
