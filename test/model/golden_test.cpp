// The exported text of small networks, against files checked in under
// golden/. To regenerate them after a deliberate change of the format:
//   CSP_UPDATE_GOLDEN=1 ./build/test/model/model_tests --gtest_filter='golden*'
// and review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "collectives/collectives.hpp"
#include "collectives/record_local.hpp"
#include "model_fixture.hpp"

namespace cc = csp::collectives;

namespace {

void expect_golden(const std::string& file, const std::string& text) {
    const std::string path = std::string(GOLDEN_DIR) + "/" + file;
    if (std::getenv("CSP_UPDATE_GOLDEN")) {
        std::ofstream(path) << text;
        return;
    }
    std::ifstream in(path);
    ASSERT_TRUE(in) << "missing golden file " << path;
    std::stringstream want;
    want << in.rdbuf();
    EXPECT_EQ(text, want.str()) << "exported text differs from " << path;
}

void expect_all_formats(const std::string& name, const csp::model::network& net) {
    std::ostringstream pml, csp, dot;
    csp::model::write_promela(pml, net, name);
    csp::model::write_cspm(csp, net, {name, {}});
    csp::model::write_dot(dot, net, name);
    expect_golden(name + ".pml", pml.str());
    expect_golden(name + ".csp", csp.str());
    expect_golden(name + ".dot", dot.str());
}

}  // namespace

TEST(golden, commstime_ten_loops) { expect_all_formats("commstime", model_test::commstime(10)); }

TEST(golden, ping_two_rounds) { expect_all_formats("ping", model_test::ping(2)); }

TEST(golden, binomial_broadcast_of_4) {
    expect_all_formats("broadcast4", cc::record_local(4, [](auto& c) { cc::broadcast_binomial(c, 7, 0); }));
}

TEST(cspm, a_specification_adds_a_trace_refinement_assertion) {
    std::ostringstream os;
    csp::model::write_cspm(os, model_test::ping(1), {"ping", "SPEC = CHAOS(Events)"});
    EXPECT_NE(os.str().find("SPEC = CHAOS(Events)\nassert SPEC [T= SYSTEM\n"), std::string::npos) << os.str();
    EXPECT_NE(os.str().find("assert SYSTEM :[deadlock free [F]]"), std::string::npos);
    EXPECT_NE(os.str().find("assert SYSTEM :[divergence free]"), std::string::npos);
}
