// Every example takes --export-cspm, --export-promela, --export-dot and
// --trace: the files appear, the Promela verifies in SPIN, the trace parses.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "model_fixture.hpp"

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

struct example_case {
    const char* name;
    std::string command;  // without the flags
};

// How ctest's listing and gtest show a case (not its bytes).
void PrintTo(const example_case& c, std::ostream* os) { *os << c.name; }

}  // namespace

class example_flags : public ::testing::TestWithParam<example_case> {};

TEST_P(example_flags, write_models_that_verify_and_a_trace_that_parses) {
    const auto& ex = GetParam();
    const fs::path dir =
        fs::temp_directory_path() / ("csp_example_" + std::string(ex.name) + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string flags = " --export-cspm " + (dir / "m.csp").string() + " --export-promela " +
                              (dir / "m.pml").string() + " --export-dot " + (dir / "m.dot").string() + " --trace " +
                              (dir / "t.json").string();
    const std::string out = model_test::run_command(ex.command + flags + " > /dev/null; echo exit=$?");
    EXPECT_NE(out.find("exit=0"), std::string::npos) << out;

    EXPECT_NE(slurp(dir / "m.csp").find("assert SYSTEM :[deadlock free [F]]"), std::string::npos);
    EXPECT_NE(slurp(dir / "m.dot").find("digraph"), std::string::npos);
    const auto trace = boost::json::parse(slurp(dir / "t.json"));
    EXPECT_GT(trace.at("traceEvents").as_array().size(), 4u);
    const std::string spin = model_test::run_command("cd " + dir.string() +
                                                     " && spin -a m.pml && gcc -O0 -DSAFETY -o pan pan.c && ./pan");
    EXPECT_NE(spin.find("State-vector"), std::string::npos) << "SPIN did not run:\n" << spin;
    EXPECT_NE(spin.find("errors: 0"), std::string::npos) << spin;
    if (!model_test::cspmcheck_path().empty()) {
        const auto cspm = model_test::check_cspm((dir / "m.csp").string());
        EXPECT_TRUE(cspm.accepted) << cspm.output;
    }
    fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    every_example, example_flags,
    ::testing::Values(example_case{"commstime", COMMSTIME " 3"}, example_case{"listing1", LISTING1},
                      example_case{"pi", PI " 100000 4"}, example_case{"fit_loop", FIT_LOOP " 2 5"},
                      example_case{"figure5", FIGURE5 " 1"}, example_case{"variance", VARIANCE " 3 2 6"},
                      example_case{"plankton", PLANKTON " 2 1"},
                      example_case{"jacobi_graph", JACOBI " graph 2 8 2 2 --ranks 2"}),
    [](const auto& info) { return std::string(info.param.name); });

// Regression: a file an example could not write (a folder that does not
// exist) was skipped in silence, and the example exited 0. Now the example
// names the file and exits 1, for each flag.
TEST_P(example_flags, name_a_file_they_cannot_write_and_exit_1) {
    const auto& ex = GetParam();
    for (const char* flag : {"--export-cspm", "--export-promela", "--export-dot", "--trace"}) {
        const std::string file = "/nonexistent-csp-folder/out";
        const std::string out =
            model_test::run_command(ex.command + " " + flag + " " + file + " 2>&1 > /dev/null; echo exit=$?");
        EXPECT_NE(out.find("cannot write " + file), std::string::npos) << flag << ": " << out;
        EXPECT_NE(out.find("exit=1"), std::string::npos) << flag << ": " << out;
    }
}

// A million loops fold into the four textbook processes.
TEST(example_flags, commstime_with_its_default_loop_count_exports_a_small_recursive_model) {
    const fs::path dir = fs::temp_directory_path() / ("csp_example_commstime_default" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string out = model_test::run_command(std::string(COMMSTIME) + " --export-cspm " +
                                                    (dir / "m.csp").string() + " > /dev/null; echo exit=$?");
    EXPECT_NE(out.find("exit=0"), std::string::npos) << out;
    const std::string text = slurp(dir / "m.csp");
    EXPECT_LT(fs::file_size(dir / "m.csp"), 10u * 1024) << text;
    for (const char* who : {"prefix", "delta", "succ", "consumer"})
        EXPECT_NE(text.find(std::string("-- Folded: ") + who), std::string::npos) << text;
    EXPECT_NE(text.find("\nN = 1000000\n"), std::string::npos) << text;
    if (model_test::cspmcheck_path().empty()) GTEST_SKIP() << "cspmcheck is not on this machine: CSPm not loaded";
    // Loaded as written; evaluated (which unfolds every pass) with the
    // file's one pass count set to 3, as its header invites.
    const auto loaded = model_test::run_command(model_test::cspmcheck_path() + " " + (dir / "m.csp").string() +
                                                "; echo cspmcheck_rc=$?");
    EXPECT_NE(loaded.find("cspmcheck_rc=0"), std::string::npos) << loaded;
    std::ofstream(dir / "m3.csp") << std::regex_replace(text, std::regex("\nN = 1000000\n"), "\nN = 3\n");
    const auto evaluated = model_test::check_cspm((dir / "m3.csp").string());
    EXPECT_TRUE(evaluated.accepted) << evaluated.output;
    fs::remove_all(dir);
}

// Each node's model holds its own processes (no par started them) and none
// of the node's network daemons: it verifies and loads, with no false deadlock.
TEST(example_flags_over_tcp, each_node_of_the_ring_exports_models_without_a_false_deadlock) {
    const fs::path dir = fs::temp_directory_path() / ("csp_example_ring_models" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string out = model_test::run_command(std::string(CSP_LAUNCH) + " -n 3 " + RING + " 2 --export-cspm " +
                                                    (dir / "ring.csp").string() + " --export-promela " +
                                                    (dir / "ring.pml").string() + " > /dev/null; echo exit=$?");
    EXPECT_NE(out.find("exit=0"), std::string::npos) << out;
    for (int r = 0; r < 3; ++r) {
        const std::string rank = ".rank" + std::to_string(r);
        const std::string pml = "ring.pml" + rank;
        const std::string spin = model_test::run_command("cd " + dir.string() + " && spin -a " + pml +
                                                         " && gcc -O0 -DSAFETY -o pan pan.c && ./pan");
        EXPECT_NE(spin.find("State-vector"), std::string::npos) << "SPIN did not run:\n" << spin;
        EXPECT_NE(spin.find("errors: 0"), std::string::npos) << "rank " << r << ":\n" << spin << slurp(dir / pml);
        EXPECT_EQ(slurp(dir / ("ring.csp" + rank)).find("channel c0_iosched"), std::string::npos)
            << "a daemon's channel is in the model of rank " << r;
        if (!model_test::cspmcheck_path().empty()) {
            const auto cspm = model_test::check_cspm((dir / ("ring.csp" + rank)).string());
            EXPECT_TRUE(cspm.accepted) << cspm.output;
        }
    }
    fs::remove_all(dir);
}

TEST(example_flags_over_tcp, each_node_of_the_ring_writes_its_own_trace) {
    const fs::path dir = fs::temp_directory_path() / ("csp_example_ring" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string out = model_test::run_command(std::string(CSP_LAUNCH) + " -n 3 " + RING + " 1 --trace " +
                                                    (dir / "ring.json").string() + " > /dev/null; echo exit=$?");
    EXPECT_NE(out.find("exit=0"), std::string::npos) << out;
    for (int r = 0; r < 3; ++r) {
        const auto doc = boost::json::parse(slurp(dir / ("ring.json.rank" + std::to_string(r))));
        EXPECT_GT(doc.at("traceEvents").as_array().size(), 4u) << "rank " << r;
    }
    fs::remove_all(dir);
}

// csp-launch --trace: no flag in the program, one merged file, an arrow for
// every message between nodes, each received after it was sent.
TEST(example_flags_over_tcp, csp_launch_trace_merges_the_nodes_into_one_timeline_with_every_message) {
    const fs::path dir = fs::temp_directory_path() / ("csp_launch_trace" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const fs::path file = dir / "job.json";
    constexpr int nodes = 3, laps = 2;
    const std::string out = model_test::run_command(std::string(CSP_LAUNCH) + " -n " + std::to_string(nodes) +
                                                    " --trace " + file.string() + " " + RING + " " +
                                                    std::to_string(laps) + " 2>&1; echo exit=$?");
    EXPECT_NE(out.find("exit=0"), std::string::npos) << out;
    // The token goes round laps times and once more to stop (not back to
    // node 0 the last time), and every other node reports to node 0.
    constexpr int expected = (laps + 1) * nodes - 1 + (nodes - 1);
    EXPECT_NE(out.find("timeline of 3 nodes, " + std::to_string(expected) + " messages between them"),
              std::string::npos) << out;

    std::map<std::int64_t, std::pair<std::int64_t, double>> sends, receives;  // flow id -> (pid, ts)
    std::set<std::string> groups;
    const auto doc = boost::json::parse(slurp(file));
    for (const auto& v : doc.at("traceEvents").as_array()) {
        const auto& e = v.as_object();
        if (e.at("ph") == "M" && e.at("name") == "process_name")
            groups.insert(std::string(e.at("args").at("name").as_string()));
        if (!e.contains("cat") || e.at("cat") != "message" || e.at("ph") == "i") continue;
        auto& side = e.at("ph") == "s" ? sends : receives;
        side[e.at("id").as_int64()] = {e.at("pid").as_int64(), e.at("ts").to_number<double>()};
    }
    EXPECT_EQ(groups, (std::set<std::string>{"node 0", "node 0: library", "node 1", "node 1: library", "node 2",
                                             "node 2: library"}));
    EXPECT_EQ(sends.size(), std::size_t{expected});
    ASSERT_EQ(receives.size(), sends.size());
    for (const auto& [id, s] : sends) {
        ASSERT_TRUE(receives.count(id)) << "flow " << id;
        const auto& r = receives.at(id);
        EXPECT_NE(s.first, r.first);
        EXPECT_EQ(s.first % 2, 1) << "a send on a library track";
        EXPECT_EQ(r.first % 2, 1) << "a receive on a library track";
        // One host, one clock: only the nodes' start-time readings differ.
        EXPECT_GE(r.second, s.second - 1000.0) << "flow " << id << " received before it was sent";
    }
    fs::remove_all(dir);
}
