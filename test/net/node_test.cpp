#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "csp/alt.hpp"
#include "net_fixture.hpp"

using namespace std::chrono_literals;
using net_test::run_nodes;

namespace {

struct reading {
    std::string sensor;
    std::vector<double> values;
    template <class A>
    void serialize(A& a) { a(sensor, values); }
};

TEST(net_node, ping_pong_between_two_nodes) {
    csp::net::nameserver ns;
    std::vector<int> seen;
    run_nodes(ns, "pingpong", 2, [&](csp::net::node& self) {
        auto inbox = self.open(7);
        const int other = 1 - self.rank();
        if (self.rank() == 0) {
            for (int i = 0; i < 100; ++i) {
                self.send(other, 7, i);
                seen.push_back(inbox.receive<int>());
            }
        } else {
            for (int i = 0; i < 100; ++i) self.send(other, 7, inbox.receive<int>() * 2);
        }
    });
    ASSERT_EQ(seen.size(), 100u);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(seen[static_cast<std::size_t>(i)], 2 * i);
}

}  // namespace
