// Edges of common graph shapes (dataflow/shapes.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "dataflow/shapes.hpp"

namespace {

namespace df = csp::dataflow;

std::vector<df::task_id> froms(const df::task_edges& e) {
    std::vector<df::task_id> v;
    for (const auto& in : e.inputs) v.push_back(in.from);
    return v;
}
std::vector<df::task_id> tos(const df::task_edges& e) {
    std::vector<df::task_id> v;
    for (const auto& out : e.outputs) v.push_back(out.to);
    return v;
}

TEST(stencil_1d, takes_itself_then_its_left_then_its_right_neighbour) {
    using ids = std::vector<df::task_id>;
    EXPECT_EQ(froms(df::stencil_1d(0, 5)), (ids{0, 1}));
    EXPECT_EQ(froms(df::stencil_1d(2, 5)), (ids{2, 1, 3}));
    EXPECT_EQ(froms(df::stencil_1d(4, 5)), (ids{4, 3}));
    EXPECT_EQ(froms(df::stencil_1d(0, 1)), (ids{0}));
    for (df::task_id t = 0; t < 5; ++t) EXPECT_EQ(tos(df::stencil_1d(t, 5)), froms(df::stencil_1d(t, 5))) << t;
}

TEST(stencil_1d, every_edge_has_the_lag_asked_for) {
    const df::task_edges e = df::stencil_1d(3, 8, 2);
    for (const auto& in : e.inputs) EXPECT_EQ(in.lag, 2);
    for (const auto& out : e.outputs) EXPECT_EQ(out.lag, 2);
    EXPECT_EQ(df::stencil_1d(3, 8).inputs.front().lag, 1);
}

// Each edge is listed on both sides, as run() checks: t's output to u
// is u's input from t.
TEST(stencil_1d, each_output_is_its_consumers_input) {
    const df::task_id n = 6;
    for (df::task_id t = 0; t < n; ++t)
        for (const auto& out : df::stencil_1d(t, n).outputs) {
            const auto ins = df::stencil_1d(out.to, n).inputs;
            EXPECT_EQ(std::count(ins.begin(), ins.end(), df::input{t, out.lag}), 1) << t << " -> " << out.to;
        }
}

TEST(stencil_1d, a_task_outside_the_stencil_or_a_lag_below_1_is_refused_naming_it) {
    auto message = [](auto f) {
        try {
            f();
        } catch (const csp::usage_error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(message([] { df::stencil_1d(5, 5); }).find("task 5 of a stencil of 5 tasks"), std::string::npos);
    EXPECT_NE(message([] { df::stencil_1d(-1, 5); }).find("task -1"), std::string::npos);
    EXPECT_NE(message([] { df::stencil_1d(0, 0); }).find("of a stencil of 0 tasks"), std::string::npos);
    EXPECT_NE(message([] { df::stencil_1d(1, 5, 0); }).find("lag 0"), std::string::npos);
}

}  // namespace
