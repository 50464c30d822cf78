// The host board's shapes and the sets its meetings use
// (collectives/host_board.hpp), in one process: two ranks' mappings of one
// segment. Meetings between OS processes are tested under csp-launch
// (net_peer.cpp's host-board modes).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/host_board.hpp"
#include "csp/detail/process_record.hpp"
#include "csp/detail/runtime_core.hpp"
#include "csp/detail/stack_pool.hpp"
#include "csp/runtime.hpp"

namespace cc = csp::collectives;

namespace {

std::span<const std::byte> bytes_of(const std::vector<int>& v) { return std::as_bytes(std::span(v)); }

TEST(host_board_shape, a_large_board_has_three_sets_of_whole_lines_near_a_mebibyte_each) {
    for (int n : {1, 2, 3, 4, 5, 8, 12, 16, 64, 1000}) {
        const auto sh = cc::host_board::large_shape(n);
        const std::size_t part = sh.part_capacity + 64;
        EXPECT_EQ(sh.sets, 3) << n;
        EXPECT_EQ(part % 64, 0u) << n;
        EXPECT_GE(part, 64u * 1024) << n;
        EXPECT_LE(part, 256u * 1024) << n;
        // A set is about large_set_bytes unless the part limits bind.
        if (part > 64u * 1024 && part < 256u * 1024) {
            EXPECT_LE(part * static_cast<std::size_t>(n), cc::host_board::large_set_bytes) << n;
            EXPECT_GT((part + 64) * static_cast<std::size_t>(n), cc::host_board::large_set_bytes) << n;
        }
    }
    EXPECT_EQ(cc::host_board::large_shape(2).part_capacity, 256u * 1024 - 64);
    EXPECT_EQ(cc::host_board::large_shape(8).part_capacity, 128u * 1024 - 64);
}

TEST(host_board_shape, a_shape_that_is_not_whole_lines_or_has_four_sets_is_refused_by_name) {
    try {
        (void)cc::host_board::create(2, 0, false, {1000, 2});
        FAIL() << "a part of 1000 bytes was taken";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("parts of 1000 bytes in 2 sets"), std::string::npos) << e.what();
    }
    try {
        (void)cc::host_board::create(2, 0, false, {4096 - 64, 4});
        FAIL() << "four sets were taken";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("in 4 sets"), std::string::npos) << e.what();
    }
}

// Meeting m uses set m % 3 on a large board: a part comes back three
// meetings later and never sooner; each rank's own part is the part the
// others read; what one rank copied in, the other reads.
TEST(host_board_sets, a_large_boards_meetings_take_turns_over_three_sets) {
    const auto sh = cc::host_board::large_shape(2);
    auto first = cc::host_board::create(2, 0, false, sh);
    auto second = cc::host_board::open(first.name(), 2, 1, false, sh);
    first.unlink_name();
    EXPECT_EQ(first.capacity(), sh.part_capacity);
    std::vector<const std::byte*> seen;
    for (int m = 1; m <= 7; ++m) {
        const std::vector<int> a(1000, m), b(sh.part_capacity / sizeof(int), -m);
        EXPECT_EQ(first.arrive(7, bytes_of(a)), static_cast<std::uint64_t>(m));
        EXPECT_EQ(second.arrive(7, bytes_of(b)), static_cast<std::uint64_t>(m));
        const auto mine = first.part_of(m, 0), theirs = first.part_of(m, 1);
        EXPECT_TRUE(mine.fits && theirs.fits);
        EXPECT_EQ(theirs.bytes, b.size() * sizeof(int));
        EXPECT_EQ(std::memcmp(theirs.data, b.data(), theirs.bytes), 0) << m;
        EXPECT_EQ(std::memcmp(second.part_of(m, 0).data, a.data(), a.size() * sizeof(int)), 0) << m;
        EXPECT_EQ(first.own_part(m), mine.data);
        seen.push_back(mine.data);
    }
    EXPECT_EQ(std::set<const std::byte*>(seen.begin(), seen.end()).size(), 3u);
    for (std::size_t i = 3; i < seen.size(); ++i) EXPECT_EQ(seen[i], seen[i - 3]) << i;
    EXPECT_EQ(first.meetings(), 7u);
    // One byte too many for a part: the head says so, nothing is copied.
    const std::vector<std::byte> over(sh.part_capacity + 1);
    const auto m = first.arrive(7, over);
    EXPECT_FALSE(first.part_of(m, 0).fits);
    EXPECT_EQ(first.part_of(m, 0).bytes, over.size());
}

// A board is made by a process, on its stack: the name's random bits came
// from a std::random_device, a 5 KiB object, and the process wrote 8,728
// bytes deep; with getrandom, 3,704 (about 1.8 KiB of it the process's own
// start and end).
TEST(host_board, is_made_without_a_five_kib_random_device_on_the_process_stack) {
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "stack depths are not measured under AddressSanitizer";
#endif
    std::shared_ptr<csp::detail::stack_pool> pool;
    std::size_t made = 0;
    csp::detail::stack_pool::clear_shelf();  // stacks an earlier run wrote would count
    csp::run(
        [&] {
            pool = csp::detail::current_process()->runtime()->stack_store();
            pool->watch_depth();
            csp::par([&] {
                auto board = cc::host_board::create(2, 0, false, {});
                made = board.name().size();
            });
        },
        {.stack_size = 64 * 1024});
    EXPECT_GT(made, 0u);
    EXPECT_GT(pool->deepest(), 256u) << "the watch saw no stack at all";
    EXPECT_LT(pool->deepest(), 6144u);
}

}  // namespace
