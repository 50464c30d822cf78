// The Chrome trace-event JSON of a run parses and holds every communication.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <map>
#include <sstream>

#include "csp/csp.hpp"
#include "csp/model/timeline.hpp"
#include "csp/process_group.hpp"

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
        if (ph == "M" && e.at("name") == "thread_name") ++threads[std::string(e.at("args").at("name").as_string())];
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

namespace {

struct parsed {
    boost::json::value doc;
    std::map<std::string, int> instants;               // name -> count
    std::map<std::string, std::vector<std::string>> tracks;  // track name -> instants on it
    std::map<std::string, std::pair<int, int>> messages;      // key -> (starts, ends)
};

parsed parse(const std::string& text) {
    parsed p{boost::json::parse(text), {}, {}, {}};
    std::map<std::pair<std::int64_t, std::int64_t>, std::string> names;
    const auto& events = p.doc.at("traceEvents").as_array();
    for (const auto& v : events) {
        const auto& e = v.as_object();
        if (e.at("ph") == "M" && e.at("name") == "thread_name")
            names[{e.at("pid").as_int64(), e.at("tid").as_int64()}] = std::string(e.at("args").at("name").as_string());
    }
    for (const auto& v : events) {
        const auto& e = v.as_object();
        const std::string ph(e.at("ph").as_string());
        if (ph == "i") {
            const std::string name(e.at("name").as_string());
            ++p.instants[name];
            p.tracks[names[{e.at("pid").as_int64(), e.at("tid").as_int64()}]].push_back(name);
        }
        if ((ph == "s" || ph == "f") && e.at("cat") == "message") {
            auto& [s, f] = p.messages[std::string(e.at("args").at("message").as_string())];
            ++(ph == "s" ? s : f);
        }
    }
    return p;
}

}  // namespace

TEST(timeline, shows_each_barrier_sync_on_its_process_track) {
    csp::model::timeline t;
    csp::run([] {
        csp::barrier b(2, "step");
        csp::par(csp::proc("left", [&] { b.sync(), b.sync(); }), csp::proc("right", [&] { b.sync(), b.sync(); }));
    }, {.threads = 2});
    std::ostringstream os;
    t.write(os);
    std::map<std::string, int> instants;
    const auto doc = boost::json::parse(os.str());
    for (const auto& v : doc.at("traceEvents").as_array()) {
        const auto& e = v.as_object();
        if (e.at("ph").as_string() == "i") ++instants[std::string(e.at("name").as_string())];
    }
    EXPECT_EQ(instants["sync barrier 'step' (phase 0)"], 2);
    EXPECT_EQ(instants["sync barrier 'step' (phase 1)"], 2);
}

TEST(timeline, draws_messages_between_nodes_keyed_by_sender_receiver_port_tag_and_order) {
    csp::model::timeline t(1);
    csp::run([] {
        for (int k = 0; k < 3; ++k) csp::notify_message(csp::event::kind::message_sent, {1, 2, 7, 9, 16});
        csp::notify_message(csp::event::kind::message_sent, {1, 2, 7, 10, 16});
        csp::notify_message(csp::event::kind::message_received, {0, 1, 7, 9, 24});
    });
    std::ostringstream os;
    t.write(os);
    EXPECT_EQ(t.messages_sent(), 4u);
    EXPECT_EQ(t.messages_received(), 1u);
    const parsed p = parse(os.str());
    EXPECT_EQ(p.doc.at("otherData").at("csp_node").as_int64(), 1);
    EXPECT_GT(p.doc.at("otherData").at("csp_epoch_us").as_int64(), 0);
    EXPECT_EQ(p.instants.at("send to node 2 (port 0x7, tag 0x9, 16 bytes)"), 3);
    EXPECT_EQ(p.instants.at("send to node 2 (port 0x7, tag 0xa, 16 bytes)"), 1);
    EXPECT_EQ(p.instants.at("receive from node 0 (port 0x7, tag 0x9, 24 bytes)"), 1);
    // The k-th of each (from, to, port, tag): the key the other node's end carries.
    const std::map<std::string, std::pair<int, int>> keys = {{"1.2.7.9.0", {1, 0}},
                                                             {"1.2.7.9.1", {1, 0}},
                                                             {"1.2.7.9.2", {1, 0}},
                                                             {"1.2.7.10.0", {1, 0}},
                                                             {"0.1.7.9.0", {0, 1}}};
    EXPECT_EQ(p.messages, keys);
}

// A message with a sender's sequence is keyed by (from, to, sequence) and
// its occurrence, whatever its port and tag and whatever the order of other
// messages' events: the key the other node computes for the same message.
TEST(timeline, keys_a_message_with_a_sequence_by_sender_receiver_and_sequence) {
    csp::model::timeline t(1);
    csp::run([] {
        csp::notify_message(csp::event::kind::message_sent, {1, 2, 7, 9, 16, 5});
        csp::notify_message(csp::event::kind::message_sent, {1, 2, 7, 9, 16, 4});
        csp::notify_message(csp::event::kind::message_sent, {1, 2, 8, 3, 16, 5});  // sequence 5 came round again
        csp::notify_message(csp::event::kind::message_received, {0, 1, 7, 9, 24, 65535});
        csp::notify_message(csp::event::kind::message_received, {0, 1, 7, 9, 24, 0});  // sender not observed
    });
    std::ostringstream os;
    t.write(os);
    const parsed p = parse(os.str());
    const std::map<std::string, std::pair<int, int>> keys = {{"1.2.s5.0", {1, 0}},
                                                             {"1.2.s4.0", {1, 0}},
                                                             {"1.2.s5.1", {1, 0}},
                                                             {"0.1.s65535.0", {0, 1}},
                                                             {"0.1.7.9.0", {0, 1}}};
    EXPECT_EQ(p.messages, keys);
}

TEST(timeline, gives_a_process_that_began_before_it_a_track_that_ends_when_it_stops) {
    csp::run([] {
        csp::model::timeline t;  // made inside the process: its begin was missed
        csp::channel<int> c{"late", csp::buffer::fifo(1)};
        c.writer().write(1);
        c.reader().read();
        std::ostringstream os;
        t.write(os);
        const parsed p = parse(os.str());
        EXPECT_EQ(p.tracks.at("main"), (std::vector<std::string>{"write channel 'late'", "read channel 'late'"}));
        int complete = 0;
        for (const auto& v : p.doc.at("traceEvents").as_array())
            if (v.at("ph") == "X") ++complete;
        EXPECT_EQ(complete, 1);  // main, still running when written
    });
}

TEST(timeline, shows_a_channel_a_daemon_used_on_the_library_tracks_only) {
    csp::model::timeline t;
    csp::run([] {
        csp::channel<int> service{"service"}, mine{"mine", csp::buffer::fifo(1)};
        csp::process_group daemons;
        daemons.spawn(csp::proc("server", [in = service.reader()] {
                          for (int i = 0; i < 2; ++i) in.read();
                      }),
                      csp::process_kind::daemon);
        service.writer().write(1);
        service.writer().write(2);
        mine.writer().write(3);
        mine.reader().read();
        daemons.wait();
    });
    std::ostringstream os;
    t.write(os);
    const parsed p = parse(os.str());
    EXPECT_EQ(p.tracks.at("main"), (std::vector<std::string>{"write channel 'mine'", "read channel 'mine'"}));
    EXPECT_EQ(p.tracks.at("server"), (std::vector<std::string>{"read channel 'service'", "read channel 'service'"}));
    std::map<std::int64_t, std::string> groups;
    for (const auto& v : p.doc.at("traceEvents").as_array())
        if (v.at("ph") == "M" && v.at("name") == "process_name")
            groups[v.at("pid").as_int64()] = std::string(v.at("args").at("name").as_string());
    EXPECT_EQ(groups, (std::map<std::int64_t, std::string>{{1, "processes"}, {2, "library"}}));
    for (const auto& v : p.doc.at("traceEvents").as_array()) {
        if (v.at("ph") == "s" || v.at("ph") == "f") {
            EXPECT_EQ(std::string(v.at("name").as_string()), "channel 'mine'") << "an arrow on a library channel";
        }
    }
}
