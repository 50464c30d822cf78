// Traces of a graph run: every instance and every transfer recorded,
// gathered at rank 0, written as Chrome trace JSON and as a Gantt chart.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "collectives/collectives.hpp"
#include "csp/runtime.hpp"
#include "dataflow/dataflow.hpp"

namespace cc = csp::collectives;
namespace df = csp::dataflow;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t c = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++c;
    return c;
}

// A ring of 6 tasks on 3 ranks: each sends its value on to the next task.
df::task_graph<double> ring() {
    return df::task_graph<double>{
        .tasks = 6,
        .owner = [](df::task_id t) { return static_cast<int>(t / 2); },
        .edges = [](df::task_id t) {
            return df::task_edges{.inputs = {{(t + 5) % 6, 1}}, .outputs = {{(t + 1) % 6, 1}}};
        },
        .body = [](df::task<double>& t) { t.emit(0, t.input(0) + 1.0); },
        .name = [](df::task_id t) { return "hop " + std::to_string(t); },
    };
}

TEST(graph_trace, records_every_instance_and_transfer_and_gathers_them_at_rank_0) {
    const int steps = 5;
    df::graph_trace all;
    std::uint64_t sent = 0;
    csp::run([&] {
        cc::run_local(3, [&](cc::local_communicator& comm) {
            df::graph_trace mine;
            const auto st = df::run(comm, ring(), steps, {}, &mine);
            EXPECT_EQ(mine.tasks.size(), 2u * steps);
            auto got = mine.collect(comm);
            if (comm.rank() == 0) all = std::move(got), sent = st.sent;
            else EXPECT_TRUE(got.tasks.empty());
        });
    });
    EXPECT_EQ(all.tasks.size(), 6u * steps);
    // Tasks 1, 3, 5 send to another rank: one value per step but the last.
    std::size_t sends = 0, arrivals = 0;
    for (const auto& x : all.transfers) (x.kind == df::transfer_event::sent ? sends : arrivals)++;
    EXPECT_EQ(sends, 3u * (steps - 1));
    EXPECT_EQ(arrivals, sends);
    EXPECT_EQ(sent, static_cast<std::uint64_t>(steps - 1));
    for (const auto& s : all.tasks) {
        EXPECT_LE(s.start_ns, s.end_ns);
        EXPECT_EQ(s.rank, static_cast<int>(s.id / 2));
    }
    for (int r = 0; r < 3; ++r) {
        EXPECT_GT(all.busy_fraction(r), 0.0);
        EXPECT_LE(all.busy_fraction(r), 1.0);
    }

    std::ostringstream json;
    all.write_chrome(json, ring().name);
    EXPECT_EQ(count(json.str(), R"("ph":"X")"), 6u * steps);
    EXPECT_EQ(count(json.str(), R"("ph":"s")"), sends);
    EXPECT_EQ(count(json.str(), R"("ph":"f")"), sends);
    EXPECT_EQ(count(json.str(), R"("name":"hop 3")"), static_cast<std::size_t>(steps));
    EXPECT_EQ(count(json.str(), "process_name"), 3u);

    std::ostringstream gantt;
    all.write_gantt(gantt, 40);
    EXPECT_EQ(count(gantt.str(), "\nr0 w0 "), 1u) << gantt.str();
    EXPECT_EQ(count(gantt.str(), "\nr2 w0 "), 1u) << gantt.str();
    EXPECT_GE(count(gantt.str(), "^"), 1u) << gantt.str();
}

}  // namespace
