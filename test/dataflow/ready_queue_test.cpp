// The ready-queue policies on their own.
#include <gtest/gtest.h>

#include <vector>

#include "dataflow/ready_queue.hpp"

namespace df = csp::dataflow;

namespace {

std::vector<df::task_id> drain(df::ready_queue& q) {
    std::vector<df::task_id> out;
    while (!q.empty()) out.push_back(q.pop().id);
    return out;
}

TEST(by_priority, serves_the_highest_first_and_is_fifo_among_equals) {
    df::by_priority q;
    const std::int64_t prio[] = {0, 5, 0, -3, 5, 0};
    for (int i = 0; i < 6; ++i) q.push({i, 0, prio[i], static_cast<std::uint64_t>(i)});
    EXPECT_EQ(drain(q), (std::vector<df::task_id>{1, 4, 0, 2, 5, 3}));
}

TEST(newest_first, serves_the_last_pushed_first_whatever_its_priority) {
    df::newest_first q;
    for (int i = 0; i < 4; ++i) q.push({i, 0, 10 - i, static_cast<std::uint64_t>(i)});
    EXPECT_EQ(drain(q), (std::vector<df::task_id>{3, 2, 1, 0}));
}

}  // namespace
