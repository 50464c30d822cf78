// What a recording holds: processes with their par structure, channels with
// their kind, the communications in order, and notes on what it cannot see.
#include <gtest/gtest.h>

#include <sstream>

#include "collectives/collectives.hpp"
#include "collectives/record_local.hpp"
#include "model_fixture.hpp"

namespace cc = csp::collectives;
using csp::model::direction;
using csp::model::step;

namespace {
std::size_t find_process(const csp::model::network& net, const std::string& name) {
    for (std::size_t p = 0; p < net.processes.size(); ++p)
        if (net.processes[p].name == name) return p;
    ADD_FAILURE() << "no process " << name;
    return 0;
}
}  // namespace

TEST(recorder, keeps_the_par_tree_and_each_process_s_communications_in_order) {
    auto net = model_test::ping(3);
    ASSERT_EQ(net.processes.size(), 3u);
    EXPECT_EQ(net.processes[0].name, "main");
    ASSERT_EQ(net.processes[0].body.size(), 1u);
    EXPECT_EQ(net.processes[0].body[0].what, step::kind::par);
    EXPECT_EQ(net.processes[0].body[0].children, (std::vector<std::size_t>{1, 2}));
    const auto& ping = net.processes[find_process(net, "ping")];
    ASSERT_EQ(ping.body.size(), 6u);
    for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(ping.body[i].dir, i % 2 ? direction::receive : direction::send);
    ASSERT_EQ(net.channels.size(), 2u);
    EXPECT_EQ(net.channels[0].name, "c0_there");
    EXPECT_EQ(net.channels[0].capacity, 0u);
    EXPECT_EQ(net.count(0, direction::send), 3u);
    EXPECT_EQ(net.count(0, direction::receive), 3u);
}

// Regression: barrier syncs were not recorded at all, so a model could not
// see the order a barrier imposes (nor a deadlock it causes).
TEST(recorder, barrier_syncs_are_recorded_with_the_members_of_each_phase) {
    auto net = model_test::phases_with_a_resign(4);
    ASSERT_EQ(net.barriers.size(), 2u);
    EXPECT_EQ(net.barriers[0].name, "b0_phase");  // P, Q and R
    EXPECT_EQ(net.barriers[1].name, "b1_phase");  // P and Q, after R resigned
    const auto syncs = [&](const std::string& name) {
        std::vector<std::size_t> out;
        for (const auto& s : net.processes[find_process(net, name)].body)
            if (s.what == step::kind::sync) out.push_back(s.barrier);
        return out;
    };
    EXPECT_EQ(syncs("P"), (std::vector<std::size_t>{0, 0, 0, 0, 1}));
    EXPECT_EQ(syncs("Q"), (std::vector<std::size_t>{0, 0, 0, 0, 1}));
    EXPECT_EQ(syncs("R"), (std::vector<std::size_t>{0, 0, 0, 0}));
    const auto members = csp::model::members_of(net);
    EXPECT_EQ(members[0].size(), 3u);
    EXPECT_EQ(members[1], (std::set<std::size_t>{find_process(net, "P"), find_process(net, "Q")}));
    // P's sends and syncs alternate, as the program made them.
    const auto& p = net.processes[find_process(net, "P")].body;
    ASSERT_EQ(p.size(), 9u);
    for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(p[i].what, i % 2 ? step::kind::sync : step::kind::communicate) << i;
}

TEST(recorder, buffered_channels_keep_their_capacity_and_unbounded_ones_their_load) {
    csp::model::recorder rec;
    csp::run([] {
        csp::channel<int> fifo{"fifo", csp::buffer::fifo(3)}, lots{"lots", csp::buffer::unbounded()};
        csp::par([w = fifo.writer(), u = lots.writer()] {
            for (int i = 0; i < 5; ++i) w.write(i), u.write(i);
        }, [r = fifo.reader(), q = lots.reader()] {
            for (int i = 0; i < 5; ++i) r.read(), q.read();
        });
    });
    auto net = rec.take();
    ASSERT_EQ(net.channels.size(), 2u);
    EXPECT_EQ(net.channels[0].capacity, 3u);
    EXPECT_EQ(net.channels[1].capacity, 5u);
}

TEST(recorder, an_alternation_over_channels_is_recorded_as_a_choice_of_what_it_offered) {
    csp::model::recorder rec;
    csp::run([] {
        csp::channel<int> x{"x"}, y{"y"};
        csp::par(csp::proc("chooser", [rx = x.reader(), ry = y.reader()] {
                     int v = 0;
                     csp::select(csp::input(rx, v), csp::input(ry, v));
                 }),
                 csp::proc("sender", [w = y.writer()] { w.write(1); }));
    });
    auto net = rec.take();
    const auto& chooser = net.processes[find_process(net, "chooser")];
    EXPECT_FALSE(chooser.alternation_recorded_as_taken);
    ASSERT_EQ(chooser.body.size(), 1u);
    EXPECT_EQ(chooser.body[0].what, step::kind::choice);
    EXPECT_EQ(net.channels[chooser.body[0].channel].name, "c0_y");  // the branch taken
    const auto& offered = chooser.offers.at(0);
    ASSERT_EQ(offered.size(), 2u);
    EXPECT_EQ(net.channels[offered[0].channel].name, "c1_x");  // in the alternation's order
    EXPECT_EQ(net.channels[offered[1].channel].name, "c0_y");
    EXPECT_EQ(offered[0].dir, csp::model::direction::receive);
}

TEST(recorder, an_alternation_with_a_timeout_is_recorded_as_the_branch_taken_and_says_so) {
    csp::model::recorder rec;
    csp::run([] {
        csp::channel<int> y{"y"};
        csp::par(csp::proc("chooser", [ry = y.reader()] {
                     int v = 0;
                     csp::select(csp::input(ry, v), csp::timeout(std::chrono::seconds(30)));
                 }),
                 csp::proc("sender", [w = y.writer()] { w.write(1); }));
    });
    auto net = rec.take();
    const auto& chooser = net.processes[find_process(net, "chooser")];
    EXPECT_TRUE(chooser.alternation_recorded_as_taken);
    ASSERT_EQ(chooser.body.size(), 1u);
    EXPECT_EQ(chooser.body[0].what, step::kind::communicate);
    std::ostringstream os;
    csp::model::write_cspm(os, net, {"timeout", {}});
    EXPECT_NE(os.str().find(csp::model::alternation_note), std::string::npos) << os.str();
}

TEST(recorder, a_collective_records_rank_to_rank_messages_not_mailbox_channels) {
    auto net = cc::record_local(4, [](auto& c) { cc::allreduce_butterfly(c, 1, cc::sum{}); });
    // Four ranks exchange in two rounds: 8 messages, one channel each.
    EXPECT_EQ(net.channels.size(), 8u);
    for (std::size_t c = 0; c < net.channels.size(); ++c) {
        EXPECT_EQ(net.channels[c].name[0], 'm') << net.channels[c].name;
        EXPECT_EQ(net.channels[c].capacity, 1u);
        EXPECT_EQ(net.count(c, direction::send), 1u);
        EXPECT_EQ(net.count(c, direction::receive), 1u);
    }
    const auto& r0 = net.processes[find_process(net, "rank 0")];
    EXPECT_EQ(r0.body.size(), 4u);  // send, receive, send, receive
}

// Successive calls between the same two ranks share one channel per step,
// so a loop of collective calls is a loop of the same steps and folds
// (an iterative solver's allreduce every step).
TEST(recorder, repeated_collective_calls_reuse_their_channels_and_fold) {
    auto net = cc::record_local(4, [](auto& c) {
        for (int i = 0; i < 50; ++i) cc::allreduce_butterfly(c, 1, cc::sum{});
    });
    EXPECT_EQ(net.channels.size(), 8u);
    for (std::size_t c = 0; c < net.channels.size(); ++c) {
        EXPECT_EQ(net.count(c, direction::send), 50u);
        EXPECT_EQ(net.count(c, direction::receive), 50u);
    }
    std::ostringstream os;
    csp::model::write_cspm(os, net, {"fit", {}});
    EXPECT_LT(os.str().size(), 8u * 1024) << os.str();
    EXPECT_NE(os.str().find("-- Folded: rank 0"), std::string::npos) << os.str();
    auto spin = model_test::verify_with_spin(net, "fifty_allreduces");
    ASSERT_TRUE(spin.ran) << spin.output;
    EXPECT_EQ(spin.errors, 0) << spin.output;
    if (model_test::cspmcheck_path().empty()) GTEST_SKIP() << "cspmcheck is not on this machine: CSPm not loaded";
    EXPECT_TRUE(model_test::check_cspm(net, "fifty_allreduces").accepted);
}
