// Per-node timelines become one job timeline: every node's tracks under
// its own processes, a message's two ends joined by one arrow, times
// aligned on the nodes' wall clocks, and bad files named.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "csp/csp.hpp"
#include "csp/model/timeline.hpp"
#include "csp/model/timeline_merge.hpp"

namespace fs = std::filesystem;

namespace {

// Node `rank`'s timeline of a run that sends `sends` and takes `receives`
// (each a message_ref), written to dir/node<rank>.json.
std::string node_file(const fs::path& dir, int rank, const std::vector<csp::message_ref>& sends,
                      const std::vector<csp::message_ref>& receives) {
    csp::model::timeline t(rank);
    csp::run([&] {
        for (const auto& m : sends) csp::notify_message(csp::event::kind::message_sent, m);
        for (const auto& m : receives) csp::notify_message(csp::event::kind::message_received, m);
    });
    const std::string file = (dir / ("node" + std::to_string(rank) + ".json")).string();
    std::ofstream out(file);
    t.write(out);
    return file;
}

struct temp_dir {
    fs::path path = fs::temp_directory_path() / ("csp_merge_" + std::to_string(::getpid()));
    temp_dir() {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~temp_dir() { fs::remove_all(path); }
};

}  // namespace

TEST(timeline_merge, joins_each_send_to_its_receive_across_node_files) {
    temp_dir dir;
    const csp::message_ref a{0, 1, 5, 1, 8}, b{1, 0, 5, 2, 8};
    const std::string f0 = node_file(dir.path, 0, {a, a, a}, {b});
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // node 1 starts later on the wall clock
    const std::string f1 = node_file(dir.path, 1, {b, b}, {a, a, a});

    std::ostringstream out;
    const auto r = csp::model::merge_timelines({f1, f0}, out);  // any order
    EXPECT_EQ(r.nodes, 2u);
    EXPECT_EQ(r.messages, 4u);   // a three times, b once
    EXPECT_EQ(r.unmatched, 1u);  // node 1's second b was never taken

    const auto doc = boost::json::parse(out.str());
    std::map<std::int64_t, std::string> groups;
    std::map<std::int64_t, std::pair<std::int64_t, double>> starts, ends;  // flow id -> (pid, ts)
    double first_ts_of_node1 = 1e300;
    for (const auto& v : doc.at("traceEvents").as_array()) {
        const auto& e = v.as_object();
        if (e.at("ph") == "M" && e.at("name") == "process_name")
            groups[e.at("pid").as_int64()] = std::string(e.at("args").at("name").as_string());
        if (e.at("ph") == "s") starts[e.at("id").as_int64()] = {e.at("pid").as_int64(), e.at("ts").to_number<double>()};
        if (e.at("ph") == "f") ends[e.at("id").as_int64()] = {e.at("pid").as_int64(), e.at("ts").to_number<double>()};
        if (e.contains("ts") && e.at("pid").as_int64() == 3)
            first_ts_of_node1 = std::min(first_ts_of_node1, e.at("ts").to_number<double>());
    }
    EXPECT_EQ(groups, (std::map<std::int64_t, std::string>{
                          {1, "node 0"}, {2, "node 0: library"}, {3, "node 1"}, {4, "node 1: library"}}));
    int joined = 0;
    for (const auto& [id, s] : starts) {
        auto it = ends.find(id);
        if (it == ends.end()) continue;
        ++joined;
        EXPECT_NE(s.first, it->second.first) << "an arrow between nodes stays in one node";
    }
    EXPECT_EQ(joined, 4);
    // Node 1 began at least 20 ms after node 0: its events are shifted by that.
    EXPECT_GE(first_ts_of_node1, 20000.0);
}

TEST(timeline_merge, keeps_each_nodes_channel_arrows_apart) {
    temp_dir dir;
    auto ping = [&](int rank) {
        csp::model::timeline t(rank);
        csp::run([] {
            csp::channel<int> c{"c", csp::buffer::fifo(1)};
            c.writer().write(1);
            c.reader().read();
        });
        const std::string file = (dir.path / "n").string() + std::to_string(rank);
        std::ofstream out(file);
        t.write(out);
        return file;
    };
    const std::string f0 = ping(0), f1 = ping(1);
    std::ostringstream out;
    csp::model::merge_timelines({f0, f1}, out);
    std::map<std::int64_t, std::set<std::int64_t>> pids_of_flow;
    const auto doc = boost::json::parse(out.str());
    for (const auto& v : doc.at("traceEvents").as_array())
        if (v.at("ph") == "s" || v.at("ph") == "f") pids_of_flow[v.at("id").as_int64()].insert(v.at("pid").as_int64());
    ASSERT_EQ(pids_of_flow.size(), 2u);  // one arrow per node, not one arrow joining them
    for (const auto& [id, pids] : pids_of_flow) EXPECT_EQ(pids.size(), 1u);
}

TEST(timeline_merge, names_a_missing_file_a_file_that_is_not_json_and_a_node_given_twice) {
    temp_dir dir;
    std::ostringstream out;
    auto error_of = [&](const std::vector<std::string>& files) {
        try {
            csp::model::merge_timelines(files, out);
        } catch (const std::runtime_error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    const std::string missing = (dir.path / "gone.json").string();
    EXPECT_NE(error_of({missing}).find("gone.json: cannot be read"), std::string::npos) << error_of({missing});

    const std::string garbage = (dir.path / "garbage.json").string();
    std::ofstream(garbage) << "{\"traceEvents\": [";
    EXPECT_NE(error_of({garbage}).find("garbage.json: not JSON"), std::string::npos) << error_of({garbage});

    const std::string chrome = (dir.path / "chrome.json").string();
    std::ofstream(chrome) << "{\"traceEvents\": []}";
    EXPECT_NE(error_of({chrome}).find("chrome.json: not a csp timeline"), std::string::npos) << error_of({chrome});

    const std::string f0 = node_file(dir.path, 0, {}, {});
    const std::string again = (dir.path / "again.json").string();
    fs::copy_file(f0, again);
    EXPECT_NE(error_of({f0, again}).find("again.json: node 0 is in an earlier file too"), std::string::npos)
        << error_of({f0, again});
}
