// Every example takes --export-cspm, --export-promela, --export-dot and
// --trace: the files appear, the Promela verifies in SPIN, the trace parses.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
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

}  // namespace

class example_flags : public ::testing::TestWithParam<example_case> {};

TEST_P(example_flags, write_models_that_verify_and_a_trace_that_parses) {
    const auto& ex = GetParam();
    const fs::path dir = fs::temp_directory_path() / ("csp_example_" + std::string(ex.name) + std::to_string(::getpid()));
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
    fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    every_example, example_flags,
    ::testing::Values(example_case{"commstime", COMMSTIME " 3"}, example_case{"listing1", LISTING1},
                      example_case{"pi", PI " 100000 4"}, example_case{"fit_loop", FIT_LOOP " 2 5"},
                      example_case{"figure5", FIGURE5 " 1"}),
    [](const auto& info) { return std::string(info.param.name); });

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
