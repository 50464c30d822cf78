// Guard pages below process stacks (csp/detail/stack_guard.hpp): a process
// that overflows its stack stops the program with a message naming it,
// before it wrote over another process's stack.
#include <signal.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "csp/detail/fiber_internals.hpp"
#include "csp/detail/stack_guard.hpp"
#include "helpers.hpp"
#include "overflow.hpp"

namespace {

namespace guard = csp::detail::stack_guard;

using csp_test::descend;
using csp_test::endless;

// The permissions /proc/self/maps gives the mapping holding `at` ("rw-p",
// "---p"), or "" if none does.
std::string permissions_at(const void* at) {
    const auto a = reinterpret_cast<std::uintptr_t>(at);
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        std::istringstream in(line);
        std::string range, perms;
        in >> range >> perms;
        const auto dash = range.find('-');
        const auto lo = std::stoull(range.substr(0, dash), nullptr, 16);
        const auto hi = std::stoull(range.substr(dash + 1), nullptr, 16);
        if (a >= lo && a < hi) return perms;
    }
    return "";
}

TEST(stack_guard, a_guarded_pool_leaves_the_page_below_each_stack_inaccessible) {
    csp::detail::stack_pool pool(64 * 1024, true);
    ASSERT_TRUE(pool.guarded());
    std::vector<boost::context::stack_context> stacks;
    for (int i = 0; i < 3; ++i) stacks.push_back(pool.allocate());
    for (auto& sc : stacks) {
        EXPECT_EQ(sc.size, 64u * 1024);
        char* bottom = static_cast<char*>(sc.sp) - sc.size;
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(bottom) % guard::page_size(), 0u);
        EXPECT_EQ(permissions_at(bottom), "rw-p");
        EXPECT_EQ(permissions_at(bottom - 1), "---p");
        EXPECT_EQ(permissions_at(bottom - guard::page_size()), "---p");
    }
    EXPECT_EQ(pool.guards(), 3u);
    for (auto& sc : stacks) pool.deallocate(sc);
}

TEST(stack_guard, a_guarded_stack_is_rounded_up_to_whole_pages) {
    csp::detail::stack_pool pool(20 * 1024 + 16, true);
    ASSERT_TRUE(pool.guarded());
    EXPECT_EQ(pool.stack_size() % guard::page_size(), 0u);
    EXPECT_GE(pool.stack_size(), 20u * 1024 + 16);
    EXPECT_LT(pool.stack_size(), 20u * 1024 + 16 + guard::page_size());
}

TEST(stack_guard, small_stacks_and_runtimes_told_so_have_no_guard) {
    EXPECT_FALSE(csp::detail::stack_pool(8 * 1024, true).guarded()) << "stacks under 16 KiB share pages";
    EXPECT_FALSE(csp::detail::stack_pool(64 * 1024, false).guarded());
    const auto guarded_in = [](csp::runtime_options o) {
        return csp::run([] { return csp::detail::current_process()->runtime()->stack_store()->guarded(); }, o);
    };
    EXPECT_TRUE(guarded_in({}));
    EXPECT_TRUE(guarded_in({.stack_size = 16 * 1024}));
    EXPECT_FALSE(guarded_in({.stack_size = 8 * 1024}));
    EXPECT_FALSE(guarded_in({.guard_pages = false}));
}

// The handler runs on an alternate signal stack (the overflowed one has no
// room): every worker a process may run on has one while the run lasts.
TEST(stack_guard, every_worker_has_a_signal_stack_while_processes_run_on_it) {
    for (std::size_t threads : {1u, 2u, 4u}) {
        std::atomic<int> without{0}, seen{0};
        csp_test::run_watched(
            [&] {
                csp::par_for(64, [&](std::size_t) {
                    for (int i = 0; i < 20; ++i) {
                        stack_t s{};
                        ASSERT_EQ(::sigaltstack(nullptr, &s), 0);
                        if (s.ss_flags & SS_DISABLE) ++without;
                        ++seen;
                        csp::sleep_for(std::chrono::microseconds(10));
                    }
                });
            },
            {.threads = threads});
        EXPECT_EQ(seen.load(), 64 * 20);
        EXPECT_EQ(without.load(), 0) << threads << " workers";
    }
}

TEST(stack_guard, a_write_into_a_guard_page_stops_the_program_naming_the_stack_size) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            csp::detail::stack_pool pool(64 * 1024, true);
            boost::context::stack_context sc = pool.allocate();
            static_cast<volatile char*>(sc.sp)[-static_cast<std::ptrdiff_t>(sc.size) - 100] = 1;
        },
        "csp: a process overflowed its 65536-byte stack: it reached the guard page below it \\(fault at 0x");
}

TEST(stack_guard, a_process_that_overflows_its_stack_stops_the_program_naming_it) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(csp::run([] { csp::par(csp::proc("deep", [] { descend(0, endless); })); },
                          {.stack_size = 64 * 1024}),
                 "csp: process 'deep' overflowed its 65536-byte stack: it reached the guard page below it "
                 "\\(fault at 0x[0-9a-f]+\\); give it more with runtime_options::stack_size");
}

TEST(stack_guard, an_unnamed_process_is_named_by_its_place_and_where_it_started) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(csp::run([] { csp::par([] {}, [] { descend(0, endless); }); }, {.stack_size = 32 * 1024}),
                 "csp: process 'main.1' overflowed its 32768-byte stack");
    EXPECT_DEATH(csp::run([] { csp::par_for(3, [](std::size_t i) { descend(0, i == 2 ? endless : 10); }); },
                          {.stack_size = 32 * 1024}),
                 "csp: process 'main.2' \\(started at [^)]*stack_guard_test.cpp:[0-9]+\\) overflowed its "
                 "32768-byte stack");
}

TEST(stack_guard, a_process_overflowing_on_any_of_four_workers_is_named) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(csp::run(
                     [] {
                         csp::par_for(8, [](std::size_t) {
                             csp::sleep_for(std::chrono::microseconds(50));  // let thieves spread them
                             descend(0, endless);
                         });
                     },
                     {.threads = 4, .stack_size = 64 * 1024}),
                 "csp: process 'main.[0-7]' \\(started at [^)]*\\) overflowed its 65536-byte stack");
}

// A frame four times the stack: its lowest byte is far below the guard page.
[[gnu::noinline]] int wide_frame(std::size_t at) {
    volatile char frame[256 * 1024];
    frame[at] = 1;
    return frame[0];
}

// Regression: a frame larger than a page stepped over the guard page below
// the stack without touching it, and wrote into whatever lay below (another
// process's stack) or died of a plain segmentation fault. The libraries,
// and programs that link them, are compiled with -fstack-clash-protection:
// such a frame touches its pages in order, and the first it touches below
// the stack is the guard.
TEST(stack_guard, a_frame_larger_than_a_page_does_not_step_over_the_guard) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(csp::run([] { csp::par(csp::proc("wide", [] { wide_frame(0); })); }, {.stack_size = 64 * 1024}),
                 "csp: process 'wide' overflowed its 65536-byte stack: it reached the guard page below it");
}

// Within its stack a process recurses as deep as it likes: the guard costs
// nothing until it is touched.
TEST(stack_guard, a_process_recursing_within_its_stack_runs_to_the_end) {
    const int got = csp::run([] { return descend(0, 100); }, {.stack_size = 64 * 1024});
    EXPECT_EQ(got, 100 * 101 / 2);
}

// Each guard costs two of the program's vm.max_map_count mappings: past a
// quarter of that many guarded stacks, new stacks get none, said once; the
// budget comes back when the stacks' pool goes.
TEST(stack_guard, stacks_past_the_programs_guard_budget_get_none_and_it_is_said_once) {
    std::size_t maps = 65530;
    if (std::ifstream f("/proc/sys/vm/max_map_count"); f) f >> maps;
    const std::size_t budget = maps / 4;
    if (budget > 40000) GTEST_SKIP() << "vm.max_map_count " << maps << " makes the budget too large to fill here";
    const std::size_t room = budget - guard::in_use();  // pools on the shelf hold some
    const bool said_before = guard::said_no_guard();     // an earlier test of this program (a repeat)
    testing::internal::CaptureStderr();
    {
        csp::detail::stack_pool pool(16 * 1024, true);
        std::vector<boost::context::stack_context> stacks;
        for (std::size_t i = 0; i < room + 2; ++i) stacks.push_back(pool.allocate());
        EXPECT_EQ(pool.guards(), room);
        char* last_bottom = static_cast<char*>(stacks.back().sp) - stacks.back().size;
        EXPECT_EQ(permissions_at(last_bottom - 1), "rw-p") << "no guard past the budget";
        for (auto& sc : stacks) pool.deallocate(sc);
    }
    const std::string said = testing::internal::GetCapturedStderr();
    const std::string line = " process stacks have guard pages, the most one program gives";
    if (!said_before)
        EXPECT_NE(said.find(std::to_string(budget) + line), std::string::npos) << said;
    else
        EXPECT_EQ(said.find(line), std::string::npos) << "said once in the program: " << said;
    EXPECT_EQ(said.find(line), said.rfind(line)) << "said once: " << said;
    EXPECT_TRUE(guard::said_no_guard());
    csp::detail::stack_pool again(16 * 1024, true);
    auto sc = again.allocate();
    EXPECT_EQ(again.guards(), 1u) << "the first pool's guards went with it";
    again.deallocate(sc);
}

// A guarded stack carries no canary (its guard catches more, and the canary
// would keep its lowest page in memory); once a pool's stack goes without a
// guard, past the budget, every stack of that pool carries one again.
TEST(stack_guard, stacks_past_the_guard_budget_carry_a_canary) {
    std::size_t maps = 65530;
    if (std::ifstream f("/proc/sys/vm/max_map_count"); f) f >> maps;
    if (maps / 4 > 40000) GTEST_SKIP() << "vm.max_map_count " << maps << " makes the budget too large to fill here";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            csp::detail::stack_pool pool(16 * 1024, true);
            std::vector<boost::context::stack_context> stacks;
            const std::size_t room = maps / 4 - guard::in_use();
            for (std::size_t i = 0; i < room + 2; ++i) stacks.push_back(pool.allocate());
            boost::context::stack_context& first = stacks.front();  // guarded, given out before the canaries began
            std::memset(static_cast<char*>(first.sp) - first.size, 0xab, 16);
            pool.deallocate(first);
        },
        "past the bottom of its 16384-byte stack");
}

}  // namespace
