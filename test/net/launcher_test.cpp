// csp-launch starting nodes as OS processes.
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "test/net/launcher_fixture.hpp"

namespace {

using namespace launcher_fixture;

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
    const std::string command =
        std::string(CSP_LAUNCH)
            .append(" -n 12 --transport tcp sh -c 'echo \"r=$CSP_RANK s=$CSP_SIZE t=$CSP_TRANSPORT\"'");
    for (int round = 0; round < 10; ++round) {
        std::string out;
        ASSERT_EQ(run(command, out), 0) << out;
        for (int r = 0; r < 12; ++r)
            EXPECT_NE(out.find("r=" + std::to_string(r) + " s=12 t=tcp"), std::string::npos) << out;
    }
}

TEST(net_launcher, a_failing_node_stops_the_job_and_sets_the_exit_status) {
    std::string out;
    EXPECT_EQ(run(std::string(CSP_LAUNCH) + " -n 3 sh -c 'if [ $CSP_RANK = 1 ]; then exit 7; fi; exec sleep 30'", out),
              7)
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
    const std::pair<const char*, const char*> refused[] = {
        {"--job '' true", "--job needs a name"},
        {"--token '' true", "--token needs a secret"},
        {"--trace /no/such/folder/t.json true", "--trace /no/such/folder/t.json: cannot write in /no/such/folder"},
    };
    for (const auto& [arguments, why] : refused) {
        out.clear();
        EXPECT_EQ(run(std::string(CSP_LAUNCH) + " -n 1 " + arguments, out), 2) << arguments;
        EXPECT_NE(out.find(why), std::string::npos) << arguments << ": " << out;
    }
}

// Regression: "-n 4x" ran 4 nodes and "--timeout 5s" waited 5 s (the
// numbers were read as far as they went); a number is now the whole word.
TEST(net_launcher, a_number_followed_by_other_characters_is_refused) {
    const std::pair<const char*, const char*> refused[] = {
        {"-n 4x true", "-n needs a number, not '4x'"},
        {"-n '' true", "-n needs a number, not ''"},
        {"-n 99999999999 true", "from 1 to 1000000 (not 99999999999)"},
        {"-n 1 --timeout 5s true", "--timeout needs a whole number of seconds, at least 1 (not '5s')"},
    };
    for (const auto& [arguments, why] : refused) {
        std::string out;
        EXPECT_EQ(run(std::string(CSP_LAUNCH) + " " + arguments, out), 2) << arguments;
        EXPECT_NE(out.find(why), std::string::npos) << arguments << ": " << out;
    }
}

TEST(net_launcher, help_names_every_option_and_exits_zero) {
    for (const char* flag : {"--help", "-h"}) {
        std::string out;
        EXPECT_EQ(run(std::string(CSP_LAUNCH) + " " + flag + " 2>/dev/null", out), 0) << flag;
        for (const char* option : {"-n, -np N", "--job", "--token", "--bind HOST", "--nameserver", "--transport",
                                   "--bind-to", "--oversubscribe", "--timeout", "--no-prefix", "--trace", "-h, --help"})
            EXPECT_NE(out.find(option), std::string::npos) << flag << " does not name " << option << ":\n" << out;
    }
}

// Runs `setup` then `launch` (a csp-launch command line) in the background,
// waits until `nodes` of its ranks wrote their pid files, sends the launcher
// SIG`signal`, waits for it and prints "launcher status <its status>".
int signal_launcher(const scratch& dir, const std::string& setup, const std::string& launch, int nodes,
                    const std::string& signal, std::string& output) {
    return run_bash(dir,
                    setup + launch + " &\n" + "l=$!\n" + "while [ $(ls " + dir.path() + " | grep -c pid) -lt " +
                        std::to_string(nodes) + " ]; do sleep 0.05; done\n" + "kill -" + signal + " $l\n" +
                        "wait $l\n" + "echo \"launcher status $?\"\n",
                    output);
}

// Regression: a launcher stopped by a signal (kill, a batch system's
// SIGTERM, a closed terminal) died alone and left its nodes running with
// no one to stop them. It now passes the signal on, waits for the nodes,
// and exits 128 + the signal.
TEST(net_launcher, a_signal_to_the_launcher_stops_every_node) {
    for (const char* signal : {"TERM", "INT", "HUP"}) {
        scratch dir;
        std::string out;
        // set -m: a background job of a script would otherwise start with
        // SIGINT ignored, which the launcher (as nohup wants) respects.
        const auto start = std::chrono::steady_clock::now();
        EXPECT_EQ(
            signal_launcher(dir, "set -m\n", std::string(CSP_LAUNCH) + " -n 3 " + dir.rank("sleep 60"), 3, signal, out),
            0)
            << signal << ": " << out;
        EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20)) << signal << ": " << out;
        const int number = std::string(signal) == "TERM" ? SIGTERM : std::string(signal) == "INT" ? SIGINT : SIGHUP;
        EXPECT_NE(out.find("launcher status " + std::to_string(128 + number)), std::string::npos)
            << signal << ": " << out;
        EXPECT_NE(out.find("stopping job"), std::string::npos) << signal << ": " << out;
        const auto pids = dir.pids();
        EXPECT_EQ(pids.size(), 3u) << out;
        EXPECT_TRUE(alive(pids).empty()) << signal << ": " << alive(pids).size() << " nodes outlived their launcher";
    }
}

// Regression: SIGHUP was passed on as it was, and a node that loads UCX has
// UCX's debug handler on SIGHUP (UCX_DEBUG_SIGNO), which does not end it:
// such nodes lived until the SIGKILL 3 s later. They now get SIGTERM and end
// at once.
TEST(net_launcher, a_hangup_ends_nodes_that_load_ucx_at_once) {
    if (!CSP_TEST_WITH_UCX) GTEST_SKIP() << "built without UCX";
    scratch dir;
    std::string out;
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(signal_launcher(dir, "", std::string(CSP_LAUNCH) + " -n 2 --transport ucx " + NET_TEST_PEER + " idle " +
                                           dir.path() + "/pid",
                              2, "HUP", out),
              0)
        << out;
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_NE(out.find("launcher status 129"), std::string::npos) << out;
    EXPECT_LT(took, std::chrono::milliseconds(2900)) << "the nodes waited for the SIGKILL: " << out;
    EXPECT_TRUE(alive(dir.pids()).empty()) << out;
}

// A launcher started with a stop signal ignored (nohup's SIGHUP) keeps
// ignoring it, and so do its nodes. Shown with SIGTERM: a library loaded
// before main may take SIGHUP over (UCX's debug signal does, in the
// sanitizer build, where csp-launch loads UCX).
TEST(net_launcher, a_stop_signal_ignored_when_the_launcher_started_stays_ignored) {
    scratch dir;
    std::string out;
    EXPECT_EQ(signal_launcher(dir, "trap '' TERM\n", std::string(CSP_LAUNCH) + " -n 2 " + dir.rank("sleep 1"), 2,
                              "TERM", out),
              0)
        << out;
    EXPECT_NE(out.find("launcher status 0"), std::string::npos) << out;
    EXPECT_EQ(out.find("stopping job"), std::string::npos) << out;
}

// A node that ignores the signal is killed 3 s later.
TEST(net_launcher, a_node_that_ignores_the_signal_is_killed) {
    scratch dir;
    std::string out;
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(signal_launcher(dir, "", std::string(CSP_LAUNCH) + " -n 2 " + dir.rank("sleep 60", "trap \"\" TERM; "), 2,
                              "TERM", out),
              0)
        << out;
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_GE(took, std::chrono::milliseconds(2900)) << out;
    EXPECT_LT(took, std::chrono::seconds(20)) << out;
    EXPECT_NE(out.find("launcher status 143"), std::string::npos) << out;
    EXPECT_TRUE(alive(dir.pids()).empty()) << out;
}

// Regression: the launcher's output read by a program that stopped reading
// (`csp-launch ... | head -1`) killed the launcher with SIGPIPE and left
// the nodes running. The nodes now get SIGTERM; the launcher exits 141.
TEST(net_launcher, a_reader_that_goes_away_stops_the_job) {
    scratch dir;
    std::string out;
    const std::string script = std::string(CSP_LAUNCH) + " -n 2 sh -c 'echo $$ > " + dir.path() +
                               "/pid.$CSP_RANK; echo first; sleep 0.5; echo second; exec sleep 60' | head -1\n"
                               "echo \"launcher status ${PIPESTATUS[0]}\"\n";
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(run_bash(dir, script, out), 0) << out;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20)) << out;
    EXPECT_NE(out.find("launcher status 141"), std::string::npos) << out;
    EXPECT_NE(out.find("Broken pipe; stopping job"), std::string::npos) << out;
    const auto pids = dir.pids();
    EXPECT_EQ(pids.size(), 2u) << out;
    EXPECT_TRUE(alive(pids).empty()) << out;
}

// A launcher killed by SIGKILL cannot pass anything on: its nodes see the
// lifeline pipe end (node_options::launcher_fd) and end themselves.
TEST(net_launcher, nodes_of_a_launcher_killed_by_sigkill_end_themselves) {
    scratch dir;
    std::string out;
    EXPECT_EQ(
        signal_launcher(dir, "", std::string(CSP_LAUNCH) + " -n 3 " + NET_TEST_PEER + " idle " + dir.path() + "/pid", 3,
                        "KILL", out),
        0)
        << out;
    EXPECT_NE(out.find("launcher status 137"), std::string::npos) << out;
    const auto pids = dir.pids();
    EXPECT_EQ(pids.size(), 3u) << out;
    std::vector<pid_t> left = alive(pids);
    for (int tries = 0; tries < 500 && !left.empty(); ++tries) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        left = alive(pids);
    }
    EXPECT_TRUE(left.empty()) << left.size() << " nodes outlived their launcher by 5 s";
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
    EXPECT_EQ(static_cast<int>(first_round.size()), m)
        << "a CPU was used twice before every CPU was used once: " << out;
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
    EXPECT_EQ(run("taskset -c " + std::to_string(mine.front()) + " " + CSP_LAUNCH +
                      " -n 2 sh -c 'echo \"cpus=$CSP_LOCAL_CPUS\"; exec " + NET_TEST_PEER + " oversubscribed'",
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

// Regression: "-n 100000" on this 2-CPU machine started nodes until it was
// stopped (2,269 of them in 20 s, the machine unusable meanwhile). More than
// 16 nodes per CPU the launcher may use are refused, naming both numbers, as
// mpiexec refuses more ranks than slots, unless --oversubscribe says so.
TEST(net_launcher, more_than_sixteen_nodes_per_cpu_are_refused_without_oversubscribe) {
    const std::string one_cpu = "taskset -c " + std::to_string(cpus_of_this_process().front()) + " " + CSP_LAUNCH;
    std::string out;
    EXPECT_EQ(run(one_cpu + " -n 17 true", out), 2) << out;
    EXPECT_NE(out.find("csp-launch: -n 17 would start 17 processes on the 1 CPU this launcher may use, more than 16 "
                       "per CPU; pass --oversubscribe to start them anyway"),
              std::string::npos)
        << out;
    out.clear();
    EXPECT_EQ(run(one_cpu + " -n 16 true", out), 0) << out;
    out.clear();
    EXPECT_EQ(run(one_cpu + " --oversubscribe -n 17 sh -c 'echo \"r=$CSP_RANK\"'", out), 0) << out;
    for (int r = 0; r < 17; ++r) EXPECT_NE(out.find("r=" + std::to_string(r) + "\n"), std::string::npos) << out;
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
        EXPECT_NE(
            out.find("node " + std::to_string(r) + ": process 'main' is blocked reading from channel 'port 3 of node " +
                     std::to_string(r) + "'"),
            std::string::npos)
            << out;
    // Each node's own error, under its rank's prefix.
    for (int r = 0; r < 3; ++r) EXPECT_NE(out.find(rank_prefix(r) + "waiting for node"), std::string::npos) << out;
}

// Messages sent to a port no process opened (a wrong port id) are named in
// the job-wide deadlock report, and when their node closes: they used to
// wait there unseen.
TEST(net_launcher, messages_to_a_port_no_process_opened_are_named) {
    std::string out;
    EXPECT_NE(run(std::string(CSP_LAUNCH) + " -n 2 --transport tcp " + NET_TEST_PEER + " wrong-port", out), 0) << out;
    EXPECT_NE(out.find("csp-launch: deadlock in job"), std::string::npos) << out;
    EXPECT_NE(out.find("node 1: port 5 of node 1 holds 1 message that no process can receive: no process opened the "
                       "port (sent to the wrong port?)"),
              std::string::npos)
        << out;
    out.clear();
    EXPECT_EQ(run(std::string(CSP_LAUNCH) + " -n 2 " + NET_TEST_PEER + " wrong-port-closes", out), 0) << out;
    EXPECT_NE(out.find("closing: port 5 of node 1 holds 2 messages that no process can receive"), std::string::npos)
        << out;
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
        EXPECT_NE(out.find("node " + std::to_string(r) + ": process 'main' is blocked reading from channel 'port 3"),
                  std::string::npos)
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
