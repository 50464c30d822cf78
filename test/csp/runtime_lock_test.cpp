// csp::runtime_lock: real exactly when the processes it guards may run at the
// same time, and a real one excludes them.
#include <atomic>
#include <mutex>

#include "csp/runtime_lock.hpp"
#include "csp/spinlock.hpp"
#include "helpers.hpp"

namespace {

TEST(runtime_lock, is_needed_on_several_worker_threads_and_outside_a_runtime_only) {
    EXPECT_TRUE(csp::runtime_lock<csp::spinlock>::needed_here());  // a plain thread: not known
    bool one = true, two = false;
    csp_test::run_watched([&] { one = csp::runtime_lock<csp::spinlock>::needed_here(); });
    csp_test::run_watched([&] { two = csp::runtime_lock<csp::spinlock>::needed_here(); }, {.threads = 2});
    EXPECT_FALSE(one);
    EXPECT_TRUE(two);
}

// Four processes on two workers add to one counter under a real lock,
// yielding between increments so that they interleave: no increment is lost.
TEST(runtime_lock, a_real_lock_loses_no_update_of_processes_on_two_workers) {
    constexpr int processes = 4, rounds = 20000;
    long total = 0;
    std::atomic<int> inside{0}, overlaps{0};
    csp_test::run_watched(
        [&] {
            csp::runtime_lock<csp::spinlock> lock(csp::runtime_lock<csp::spinlock>::needed_here());
            ASSERT_TRUE(lock.real());
            csp::par_for(processes, [&](std::size_t) {
                for (int i = 0; i < rounds; ++i) {
                    {
                        std::lock_guard lk(lock);
                        if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
                        ++total;
                        inside.fetch_sub(1);
                    }
                    if (i % 64 == 0) (void)csp::yield();
                }
            });
        },
        {.threads = 2});
    EXPECT_EQ(total, static_cast<long>(processes) * rounds);
    EXPECT_EQ(overlaps.load(), 0);
}

}  // namespace
