// csp-launch at the descriptor limit: a job it cannot start, a limit too
// low for anything. Skipped under the sanitizers (descriptor_limit.hpp).
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "test/net/descriptor_limit.hpp"
#include "test/net/launcher_fixture.hpp"

namespace {

using namespace launcher_fixture;

// Regression: when the launcher could not start every node (here: out of
// file descriptors for the output pipes) it exited and left the nodes it
// had started running. They are now stopped first.
TEST(net_launcher, a_job_that_cannot_start_every_node_stops_those_it_started) {
    SKIP_AT_THE_DESCRIPTOR_LIMIT_UNDER_SANITIZERS();
    scratch dir;
    std::string out;
    const std::string script = "ulimit -n 64\n" + std::string(CSP_LAUNCH) + " --oversubscribe -n 60 " +
                               dir.rank("sleep 60") + "\necho \"launcher status $?\"\n";
    EXPECT_EQ(run_bash(dir, script, out), 0) << out;
    EXPECT_NE(out.find("launcher status 1"), std::string::npos) << out;
    EXPECT_NE(out.find("cannot make a pipe for rank"), std::string::npos) << out;
    EXPECT_EQ(out.find("stopping the 0 started"), std::string::npos) << "the test started no node: " << out;
    EXPECT_TRUE(alive(dir.pids()).empty()) << alive(dir.pids()).size() << " nodes outlived their launcher: " << out;
}

// Regression: a launcher that could not make a node's pipes stopped the
// nodes it had started with every descriptor still taken (the nodes'
// output pipes, and the half-made pair leaked), so its nameserver's thread
// ran out of them meanwhile. Each node counts the launcher's descriptors
// when asked to stop: the output pipes are closed by then.
TEST(net_launcher, a_launcher_out_of_descriptors_frees_them_before_it_stops_its_nodes) {
    SKIP_AT_THE_DESCRIPTOR_LIMIT_UNDER_SANITIZERS();
    scratch dir;
    std::string out;
    const int limit = 64;
    const std::string count = "ls /proc/$PPID/fd | wc -l > " + dir.path() + "/fds.$CSP_RANK; kill \\$!; exit 0";
    const std::string script = "ulimit -n " + std::to_string(limit) + "\n" + CSP_LAUNCH + " --oversubscribe -n 60 " +
                               dir.rank("sleep 60 & wait", "trap \"" + count + "\" TERM; ") +
                               "\necho \"launcher status $?\"\n";
    EXPECT_EQ(run_bash(dir, script, out), 0) << out;
    EXPECT_NE(out.find("launcher status 1"), std::string::npos) << out;
    EXPECT_NE(out.find("cannot make a pipe for rank"), std::string::npos) << out;
    int counted = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.path()))
        if (e.path().filename().string().starts_with("fds.")) {
            std::ifstream in(e.path());
            int fds = -1;
            ASSERT_TRUE(in >> fds) << e.path();
            ++counted;
            // The launcher's own: standard streams, the lifeline, the
            // nameserver's listener and IO scheduler; no node's pipes.
            EXPECT_LE(fds, limit / 4) << e.path() << ": " << out;
        }
    EXPECT_GT(counted, 0) << "no node counted the launcher's descriptors: " << out;
    EXPECT_TRUE(alive(dir.pids()).empty()) << alive(dir.pids()).size() << " nodes outlived their launcher: " << out;
}

// Regression: a launcher with descriptors for its nameserver's socket and
// no more crashed (SIGSEGV) on its way out, when its timing let it: the
// nameserver's IO scheduler, started after the nameserver said it was
// ready, could not make its pipe, and the serving thread reported that to
// the promise of a constructor that had returned. Now every limit either
// runs the job or refuses with an error naming what could not be made, and
// no node is left.
TEST(net_launcher, a_launcher_short_of_descriptors_refuses_clearly_at_every_limit) {
    SKIP_AT_THE_DESCRIPTOR_LIMIT_UNDER_SANITIZERS();
    int refused = 0, ran = 0;
    for (int limit = 4; limit <= 32; ++limit) {
        scratch dir;
        std::string out;
        const std::string script = "ulimit -n " + std::to_string(limit) + "\n" + CSP_LAUNCH + " -n 2 " +
                                   dir.rank("echo hello $CSP_RANK") + "\necho \"launcher status $?\"\n";
        EXPECT_EQ(run_bash(dir, script, out), 0) << out;
        const std::string at = "ulimit -n " + std::to_string(limit) + ": " + out;
        // Below some limit (it depends on what this test inherited) the
        // loader cannot open the launcher's libraries: not its to handle.
        if (out.find("error while loading shared libraries") != std::string::npos) continue;
        EXPECT_EQ(out.find("runtime error"), std::string::npos) << at;
        EXPECT_EQ(out.find("Sanitizer"), std::string::npos) << at;
        if (out.find("launcher status 0") != std::string::npos) {
            ++ran;
            EXPECT_NE(out.find("[0] hello 0"), std::string::npos) << at;
            EXPECT_NE(out.find("[1] hello 1"), std::string::npos) << at;
        } else {
            ++refused;
            EXPECT_NE(out.find("launcher status 1"), std::string::npos) << at;
            EXPECT_NE(out.find("csp-launch: cannot "), std::string::npos) << at;
        }
        EXPECT_TRUE(alive(dir.pids()).empty()) << at;
    }
    EXPECT_GT(refused, 0);
    EXPECT_GT(ran, 0);
}

}  // namespace
