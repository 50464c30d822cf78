// The ready-queue policies on their own.
#include <gtest/gtest.h>

#include <algorithm>
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

// by_priority keeps one priority level in a FIFO and moves to a heap when a
// second level arrives: interleaved pushes and pops across those switches
// are served exactly as a reference that sorts what is queued each time.
TEST(by_priority, serves_interleaved_pushes_and_pops_in_order_across_levels) {
    df::by_priority q;
    std::vector<df::ready_task> queued;  // the reference
    std::uint64_t order = 0;
    unsigned x = 12345;
    auto next = [&] { return x = x * 1103515245u + 12345u, (x >> 16) & 0x7fff; };
    std::vector<df::task_id> got, want;
    for (int round = 0; round < 2000; ++round) {
        // Runs of one level (the FIFO) broken now and then by another.
        const std::int64_t level = round % 300 < 150 ? 0 : static_cast<std::int64_t>(next() % 3);
        const int pushes = static_cast<int>(next() % 4), pops = static_cast<int>(next() % 4);
        for (int k = 0; k < pushes; ++k) {
            const df::ready_task t{static_cast<df::task_id>(order), 0, level, order};
            ++order;
            q.push(t);
            queued.push_back(t);
        }
        for (int k = 0; k < pops && !queued.empty(); ++k) {
            ASSERT_FALSE(q.empty());
            got.push_back(q.pop().id);
            auto best = std::min_element(queued.begin(), queued.end(), [](const auto& a, const auto& b) {
                return a.priority != b.priority ? a.priority > b.priority : a.order < b.order;
            });
            want.push_back(best->id);
            queued.erase(best);
        }
        EXPECT_EQ(q.empty(), queued.empty());
    }
    EXPECT_EQ(got, want);
    EXPECT_GT(got.size(), 1000u);
}

TEST(newest_first, serves_the_last_pushed_first_whatever_its_priority) {
    df::newest_first q;
    for (int i = 0; i < 4; ++i) q.push({i, 0, 10 - i, static_cast<std::uint64_t>(i)});
    EXPECT_EQ(drain(q), (std::vector<df::task_id>{3, 2, 1, 0}));
}

}  // namespace
