// The shelf of stack pools (csp/detail/stack_pool.hpp): a runtime's stacks,
// released to the system, wait there for the next runtime of the same shape.
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "csp/detail/fiber_internals.hpp"
#include "csp/detail/stack_guard.hpp"
#include "helpers.hpp"

namespace {

namespace guard = csp::detail::stack_guard;

const void* pool_of_this_runtime() { return csp::detail::current_process()->runtime()->stack_store().get(); }

// Pages of the program in memory now.
[[maybe_unused]] long resident_pages() {  // used only without AddressSanitizer
    std::ifstream statm("/proc/self/statm");
    long size = 0, resident = 0;
    statm >> size >> resident;
    return resident;
}

// `n` processes, each writing `depth` bytes of its stack, all alive at once.
void touch_stacks(std::size_t n, std::size_t depth) {
    csp::barrier all(n, "all");
    csp::par_for(n, [&, depth](std::size_t) {
        volatile char frame[48 * 1024];
        for (std::size_t i = 0; i < depth && i < sizeof frame; i += 512) frame[i] = 1;
        all.sync();  // every stack written before any process ends
        (void)frame[0];
    });
}

TEST(stack_shelf, a_second_run_of_the_same_shape_reuses_the_first_runs_stacks_and_guards) {
    const csp::runtime_options o{.stack_size = 40 * 1024};  // a shape no other test here uses
    const void* first = nullptr;
    csp::run([&] {
        first = pool_of_this_runtime();
        csp::par_for(8, [](std::size_t) {});
    }, o);
    const std::size_t guards = guard::in_use();
    EXPECT_GE(guards, 9u) << "the root and its 8 children had guarded stacks";
    const void* second = nullptr;
    csp::run([&] {
        second = pool_of_this_runtime();
        csp::par_for(8, [](std::size_t) {});
    }, o);
    EXPECT_EQ(second, first);
    EXPECT_EQ(guard::in_use(), guards) << "the second run made no guard of its own";
}

TEST(stack_shelf, runs_of_other_shapes_get_pools_of_their_own) {
    const void* a = nullptr;
    const void* b = nullptr;
    const void* c = nullptr;
    csp::run([&] { a = pool_of_this_runtime(); }, {.stack_size = 44 * 1024});
    csp::run([&] { b = pool_of_this_runtime(); }, {.stack_size = 52 * 1024});
    csp::run([&] { c = pool_of_this_runtime(); }, {.stack_size = 44 * 1024, .guard_pages = false});
    EXPECT_NE(a, b);
    EXPECT_NE(a, c);
    const void* again = nullptr;
    csp::run([&] { again = pool_of_this_runtime(); }, {.stack_size = 44 * 1024});
    EXPECT_EQ(again, a);
}

#if !defined(__SANITIZE_ADDRESS__)
// A shelved pool keeps the top 8 KiB of each stack, not the rest: 300
// processes that each wrote 40 KiB of their stacks hold about 12 MiB while
// they run, and their pool on the shelf at most 2.4 MiB.
TEST(stack_shelf, a_shelved_pool_keeps_only_the_top_of_each_stack_in_memory) {
    const long page = ::sysconf(_SC_PAGESIZE);
    const csp::runtime_options o{.stack_size = 64 * 1024 + 4096};  // a shape of its own
    csp::run([] { touch_stacks(300, 40 * 1024); }, o);  // the pool's regions exist now
    const long before = resident_pages();
    long during = 0;
    csp::run([&] {
        touch_stacks(300, 40 * 1024);
        during = resident_pages();
    }, o);
    const long after = resident_pages();
    EXPECT_GT((during - before) * page, 300L * 32 * 1024) << "the processes wrote their stacks";
    EXPECT_LT((after - before) * page, 300L * 8 * 1024 + 256 * 1024) << "the stacks' deep pages went back";
}
#endif

// A stack from the shelf is warm: the second run's processes find the
// pages the first run's left in memory, and a watch of how deep processes
// write, on a pool from an emptied shelf, sees only the new run's writes.
TEST(stack_shelf, a_watched_run_on_an_emptied_shelf_sees_only_its_own_writes) {
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "stack depths are not measured under AddressSanitizer";
#endif
    const csp::runtime_options o{.stack_size = 64 * 1024 + 8192};  // a shape of its own
    csp::run([] { touch_stacks(50, 6 * 1024); }, o);
    csp::detail::stack_pool::clear_shelf();
    std::shared_ptr<csp::detail::stack_pool> pool;
    csp::run([&] {
        pool = csp::detail::current_process()->runtime()->stack_store();
        pool->watch_depth();
        csp::par_for(50, [](std::size_t) {});
    }, o);
    EXPECT_GT(pool->deepest(), 256u) << "the watch saw no stack at all";
    EXPECT_LT(pool->deepest(), 4u * 1024) << "a stack held the last run's writes";
}

// Runtimes of one shape running at the same time on several threads never
// share a pool, and every message of every run is counted.
TEST(stack_shelf, concurrent_runtimes_never_share_a_pool) {
    std::mutex m;
    std::set<const void*> in_use;
    std::atomic<int> shared{0};
    std::atomic<long> sum{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t)
        threads.emplace_back([&] {
            for (int round = 0; round < 40; ++round)
                csp::run([&] {
                    const void* mine = pool_of_this_runtime();
                    {
                        std::lock_guard lk(m);
                        if (!in_use.insert(mine).second) ++shared;
                    }
                    csp::channel<int> c;
                    csp::par([w = c.writer()] { for (int i = 1; i <= 10; ++i) w.write(i); },
                             [&, r = c.reader()] { for (int i = 1; i <= 10; ++i) sum += r.read(); });
                    std::lock_guard lk(m);
                    in_use.erase(mine);
                }, {.stack_size = 36 * 1024});
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(shared.load(), 0);
    EXPECT_EQ(sum.load(), 3L * 40 * 55);
}

}  // namespace
