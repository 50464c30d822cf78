// The exported Promela of every collective verifies in SPIN for sizes 2..8
// with no invalid end state; broken networks are reported as deadlocked.
#include <gtest/gtest.h>

#include <functional>

#include "collectives/collectives.hpp"
#include "collectives/record_local.hpp"
#include "model_fixture.hpp"

namespace cc = csp::collectives;
using model_test::verify_with_spin;

namespace {

using body = std::function<void(cc::local_communicator&)>;

struct collective_case {
    const char* name;
    body run;
};

const collective_case cases[] = {
    {"broadcast_binomial", [](auto& c) { cc::broadcast_binomial(c, 1, c.size() - 1); }},
    {"reduce_binomial_parallel", [](auto& c) { cc::reduce_binomial_parallel(c, 1, cc::sum{}, 0); }},
    {"reduce_chain", [](auto& c) { cc::reduce_chain(c, 1, cc::sum{}, 1 % c.size()); }},
    {"barrier_binomial", [](auto& c) { cc::barrier_binomial(c); }},
    {"allreduce_butterfly", [](auto& c) { cc::allreduce_butterfly(c, 1, cc::sum{}); }},
    {"aspen_reduce",
     [](auto& c) {
         // Every rank contributes; even ranks and one outsider-like receiver get it.
         std::vector<int> P, R;
         for (int r = 0; r < c.size(); ++r) {
             if (r + 1 < c.size() || c.size() == 2) P.push_back(r);
             if (r % 2 == 0 || r == c.size() - 1) R.push_back(r);
         }
         const bool mine = std::count(P.begin(), P.end(), c.rank()) > 0;
         cc::aspen_reduce(c, mine ? std::optional<int>(1) : std::nullopt, P, R, cc::sum{});
     }},
};

}  // namespace

class spin_collectives : public ::testing::TestWithParam<int> {};

TEST_P(spin_collectives, verify_with_no_invalid_end_state) {
    const int n = GetParam();
    for (const auto& k : cases) {
        auto net = cc::record_local(n, k.run);
        auto r = verify_with_spin(net, std::string(k.name) + "_" + std::to_string(n));
        ASSERT_TRUE(r.ran) << "SPIN did not run:\n" << r.output;
        EXPECT_EQ(r.errors, 0) << k.name << " on " << n << " ranks:\n" << r.output;
        EXPECT_FALSE(r.invalid_end) << k.name << " on " << n;
    }
}

INSTANTIATE_TEST_SUITE_P(two_to_eight, spin_collectives, ::testing::Range(2, 9));

TEST(spin_broken, crossed_writes_are_a_deadlock) {
    const auto net = model_test::crossed_writes();
    auto r = verify_with_spin(net, "crossed");
    ASSERT_TRUE(r.ran) << r.output;
    EXPECT_GE(r.errors, 1);
    EXPECT_TRUE(r.invalid_end) << r.output;
}

// P syncs before it sends, Q receives before it syncs: each waits for the
// other. Only the barrier makes this a deadlock.
TEST(spin_broken, a_sync_that_waits_for_a_receive_after_it_is_a_deadlock) {
    csp::model::network net;
    auto c = net.add_channel("c");
    auto b = net.add_barrier("b");
    auto root = net.add_process("main"), p = net.add_process("P"), q = net.add_process("Q");
    net.par(root, {p, q});
    net.sync(p, b);
    net.send(p, c);
    net.receive(q, c);
    net.sync(q, b);
    auto r = verify_with_spin(net, "sync_crossed");
    ASSERT_TRUE(r.ran) << r.output;
    EXPECT_GE(r.errors, 1);
    EXPECT_TRUE(r.invalid_end) << r.output;

    // The same with the send before the sync is no deadlock.
    csp::model::network fine;
    c = fine.add_channel("c");
    b = fine.add_barrier("b");
    root = fine.add_process("main"), p = fine.add_process("P"), q = fine.add_process("Q");
    fine.par(root, {p, q});
    fine.send(p, c);
    fine.sync(p, b);
    fine.receive(q, c);
    fine.sync(q, b);
    r = verify_with_spin(fine, "sync_in_order");
    ASSERT_TRUE(r.ran) << r.output;
    EXPECT_EQ(r.errors, 0) << r.output;
}

TEST(spin_broken, a_reduce_with_one_send_missing_is_a_deadlock) {
    auto net = cc::record_local(6, [](auto& c) { cc::reduce_binomial_parallel(c, 1, cc::sum{}, 0); });
    // Drop rank 5's only send: its parent waits for it forever.
    bool dropped = false;
    for (auto& p : net.processes)
        if (p.name == "rank 5") {
            std::erase_if(p.body, [](const csp::model::step& s) {
                return s.what == csp::model::step::kind::communicate && s.dir == csp::model::direction::send;
            });
            dropped = true;
        }
    ASSERT_TRUE(dropped);
    auto r = verify_with_spin(net, "missing_send");
    ASSERT_TRUE(r.ran) << r.output;
    EXPECT_GE(r.errors, 1);
    EXPECT_TRUE(r.invalid_end) << r.output;
}

TEST(spin_recorded, phases_on_a_barrier_with_a_resign_verify) {
    auto r = verify_with_spin(model_test::phases_with_a_resign(5), "phases");
    ASSERT_TRUE(r.ran) << r.output;
    EXPECT_EQ(r.errors, 0) << r.output;
}

TEST(spin_recorded, commstime_and_ping_verify) {
    for (auto [name, net] :
         {std::pair{"commstime", model_test::commstime(3)}, std::pair{"ping", model_test::ping(3)}}) {
        auto r = verify_with_spin(net, name);
        ASSERT_TRUE(r.ran) << r.output;
        EXPECT_EQ(r.errors, 0) << name << '\n' << r.output;
    }
}
