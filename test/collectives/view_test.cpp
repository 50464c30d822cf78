// A view sent through a communicator arrives as the data it views, on every
// kind of communicator, so the sender may reuse its buffer at once.
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/collectives.hpp"
#include "collectives/local_communicator.hpp"
#include "collectives/net_communicator.hpp"
#include "csp/runtime.hpp"
#include "net/net.hpp"

namespace cc = csp::collectives;

namespace {

// Rank 0 sends a span of its row and a string_view, then overwrites both;
// rank 1 must see the values as they were at the send.
template <class C>
void send_views(C& comm, std::vector<std::vector<double>>& got, std::vector<std::string>& text) {
    const cc::tag t = comm.next_tag();
    if (comm.rank() == 0) {
        std::vector<double> row{0.5, 1.5, 2.5};
        std::string word = "halo";
        comm.send(1, t, std::span<double>(row));
        comm.send(1, t, std::string_view(word));
        row.assign(3, -1.0);
        word = "gone";
    } else if (comm.rank() == 1) {
        got.push_back(comm.template receive<std::vector<double>>(0, t));
        text.push_back(comm.template receive<std::string>(0, t));
    }
}

}  // namespace

TEST(communicator_views, a_span_sent_between_local_ranks_arrives_as_its_data) {
    std::vector<std::vector<double>> got;
    std::vector<std::string> text;
    csp::run([&] { cc::run_local(2, [&](cc::local_communicator& c) { send_views(c, got, text); }); });
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0], (std::vector<double>{0.5, 1.5, 2.5}));
    EXPECT_EQ(text, std::vector<std::string>{"halo"});
}

TEST(communicator_views, a_span_sent_to_itself_over_a_net_communicator_arrives_as_its_data) {
    csp::run([] {
        csp::net::node self{csp::net::node_options{}};
        {
            cc::net_communicator comm(self);
            std::vector<float> row{1, 2, 3};
            const cc::tag t = comm.next_tag();
            comm.send(0, t, std::span<const float>(row));
            row[0] = 9;
            EXPECT_EQ(comm.receive<std::vector<float>>(0, t), (std::vector<float>{1, 2, 3}));
        }
        self.close();
    });
}
