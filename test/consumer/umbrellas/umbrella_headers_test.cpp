// Each part's one header is enough for a whole program: csp::run, par and
// select come with it. Each function below is compiled in a file that
// includes nothing of the project but that header (no precompiled header).
#include <gtest/gtest.h>

int net_alone();
int iosched_alone();
int collectives_alone();
int dataflow_alone();

namespace {

// Regression: the README's programs included only their part's header and
// called csp::run, which none of them declared ("'run' is not a member of
// 'csp'").
TEST(umbrella_headers, a_program_that_includes_only_its_parts_header_compiles_and_runs) {
    EXPECT_EQ(net_alone(), 42);
    EXPECT_EQ(iosched_alone(), 7);
    EXPECT_EQ(collectives_alone(), 18);
    EXPECT_EQ(dataflow_alone(), 13);
}

}  // namespace
