// The Chrome trace-event JSON of a run parses and holds every communication.
#include <gtest/gtest.h>

#include <boost/json/src.hpp>
#include <map>
#include <sstream>

#include "csp/csp.hpp"
#include "csp/model/timeline.hpp"

TEST(timeline, holds_every_communication_of_the_run_as_events_and_flows) {
    csp::model::timeline t;
    constexpr int rounds = 25;
    csp::run([] {
        csp::channel<int> there{"there"}, back{"back", csp::buffer::fifo(2)};
        csp::par(csp::proc("ping", [out = there.writer(), in = back.reader()] {
                     for (int i = 0; i < rounds; ++i) {
                         out.write(i);
                         in.read();
                     }
                 }),
                 csp::proc("pong", [in = there.reader(), out = back.writer()] {
                     for (int i = 0; i < rounds; ++i) out.write(in.read());
                 }));
    }, {.threads = 2});
    std::ostringstream os;
    t.write(os);
    EXPECT_EQ(t.writes(), 2u * rounds);
    EXPECT_EQ(t.reads(), 2u * rounds);

    const auto doc = boost::json::parse(os.str());
    std::map<std::string, int> instants, threads;
    std::map<std::uint64_t, int> flow_starts, flow_ends;
    int complete = 0;
    for (const auto& v : doc.at("traceEvents").as_array()) {
        const auto& e = v.as_object();
        const std::string ph(e.at("ph").as_string());
        if (ph == "i") ++instants[std::string(e.at("name").as_string())];
        if (ph == "s") ++flow_starts[e.at("id").to_number<std::uint64_t>()];
        if (ph == "f") ++flow_ends[e.at("id").to_number<std::uint64_t>()];
        if (ph == "X") ++complete;
        if (ph == "M") ++threads[std::string(e.at("args").at("name").as_string())];
    }
    EXPECT_EQ(instants["write channel 'there'"], rounds);
    EXPECT_EQ(instants["read channel 'there'"], rounds);
    EXPECT_EQ(instants["write channel 'back'"], rounds);
    EXPECT_EQ(instants["read channel 'back'"], rounds);
    EXPECT_EQ(flow_starts.size(), 2u * rounds);
    EXPECT_EQ(flow_starts, flow_ends);  // every write's arrow ends at a read
    EXPECT_EQ(threads.count("ping"), 1u);
    EXPECT_EQ(threads.count("pong"), 1u);
    EXPECT_EQ(complete, 3);  // main, ping, pong
}
