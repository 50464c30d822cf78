// Aspen's reduce run over local channels: every receiver gets the value,
// nobody else gets one.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "collectives/collectives.hpp"
#include "csp/runtime.hpp"

namespace cc = csp::collectives;

namespace {

// Runs aspen_reduce at every rank of a `universe`-rank group with value
// (rank + 1) * 10 at participants; checks who got what.
void expect_aspen(int universe, const std::vector<int>& P, const std::vector<int>& R, std::size_t threads = 1) {
    long want = 0;
    for (int p : P) want += (p + 1) * 10;
    csp::run([&] {
        cc::run_local(universe, [&](cc::local_communicator& c) {
            const bool in_p = std::count(P.begin(), P.end(), c.rank()) > 0;
            const bool in_r = std::count(R.begin(), R.end(), c.rank()) > 0;
            std::optional<long> mine;
            if (in_p) mine = (c.rank() + 1) * 10L;
            auto got = cc::aspen_reduce(c, mine, P, R, cc::sum{});
            if (in_r) EXPECT_EQ(got.value_or(-1), want) << "receiver " << c.rank();
            else EXPECT_FALSE(got.has_value()) << "rank " << c.rank() << " is no receiver";
        });
    }, {.threads = threads});
}

}  // namespace

TEST(aspen_reduce, the_papers_worked_case) {
    // Ranks 1..11 as in the paper; rank 0 takes no part.
    expect_aspen(12, {1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 9, 10, 11});
}

TEST(aspen_reduce, one_receiver_all_receivers_and_outsiders) {
    expect_aspen(8, {0, 1, 2, 3, 4, 5, 6, 7}, {5});              // tree reduce
    expect_aspen(7, {0, 1, 2, 3, 4, 5, 6}, {0, 1, 2, 3, 4, 5, 6});  // butterfly
    expect_aspen(6, {0, 1}, {2, 3, 4, 5});                        // receivers outnumber participants
    expect_aspen(5, {3}, {0, 1, 2, 4});                           // one participant
    expect_aspen(4, {0, 1, 2, 3}, {});                            // nobody receives
}

TEST(aspen_reduce, random_participants_and_receivers) {
    std::mt19937 rng(5);
    for (int trial = 0; trial < 150; ++trial) {
        const int universe = 1 + static_cast<int>(rng() % 16);
        std::vector<int> P, R;
        for (int r = 0; r < universe; ++r) {
            if (rng() % 2) P.push_back(r);
            if (rng() % 2) R.push_back(r);
        }
        if (P.empty()) P.push_back(universe - 1);
        expect_aspen(universe, P, R, trial % 2 ? 2 : 1);
    }
}

TEST(aspen_reduce, refuses_ops_that_do_not_commute_and_bad_ranks) {
    csp::run([] {
        cc::run_local(2, [](cc::local_communicator& c) {
            auto cat = cc::ordered([](const std::string& a, const std::string& b) { return a + b; });
            EXPECT_THROW(cc::aspen_reduce(c, std::optional<std::string>("x"), {0, 1}, {0}, cat), csp::usage_error);
            EXPECT_THROW(cc::aspen_reduce(c, std::optional<int>(1), {0, 1}, {7}, cc::sum{}), csp::usage_error);
        });
    });
}
