// The public headers of every part, and what the core keeps out of line so
// that they stay free of Boost.Fiber: its headers are most of what a user's
// file would otherwise parse (waiter.cpp, timer.cpp, spawn.cpp).
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <numeric>

#include "collectives/collectives.hpp"
#include "csp/config.hpp"
#include "csp/csp.hpp"
#include "csp/process_group.hpp"
#include "csp/quiescence.hpp"
#include "csp/runtime_lock.hpp"
#include "csp/runtime_ref.hpp"
#include "csp/view.hpp"
#include "csp/wait_note.hpp"
#include "dataflow/dataflow.hpp"
#include "iosched/iosched.hpp"
#include "net/net.hpp"

#if defined(BOOST_FIBERS_DETAIL_CONFIG_H) || defined(BOOST_FIBERS_CONTEXT_H) || defined(BOOST_FIBERS_FIBER_H) || \
    defined(BOOST_THIS_FIBER_OPERATIONS_H)
#error "a public header includes Boost.Fiber: keep it behind the core's compiled interface"
#endif

#include "helpers.hpp"

namespace {

using namespace std::chrono_literals;

class public_headers : public csp_test::on_threads {};
CSP_ON_1_2_AND_4_THREADS(public_headers);

// Counts constructions and destructions of the closures that carry it.
struct census {
    static inline std::atomic<int> made{0};
    static inline std::atomic<int> gone{0};
    census() noexcept { ++made; }
    census(const census&) noexcept { ++made; }
    census(census&&) noexcept { ++made; }
    ~census() { ++gone; }
};

// A process's closure is moved to the top of its own stack before the fiber
// exists (spawn.cpp, launch): a large one, an over-aligned one and many small
// ones all run with what they captured, and each copy is destroyed once.
TEST_P(public_headers, closures_of_every_size_and_alignment_run_intact_and_are_destroyed_once) {
    census::made = 0;
    census::gone = 0;
    std::array<std::uint32_t, 1024> big{};
    std::iota(big.begin(), big.end(), 1u);
    struct alignas(64) wide {
        double x;
    };
    std::atomic<std::uint64_t> big_sum{0};
    std::atomic<std::uintptr_t> misaligned{0};
    std::atomic<int> small_runs{0};
    csp_test::run_watched(
        [&] {
            csp::par(
                [&, big, c = census{}] {
                    big_sum = std::accumulate(big.begin(), big.end(), std::uint64_t{0});
                },
                [&, w = wide{2.5}, c = census{}] {
                    misaligned = reinterpret_cast<std::uintptr_t>(&w) % 64;
                    EXPECT_EQ(w.x, 2.5);
                },
                [&] { csp::par_for(200, [&, c = census{}](std::size_t) { ++small_runs; }); });
        },
        opts());
    EXPECT_EQ(big_sum.load(), 1024u * 1025u / 2);
    EXPECT_EQ(misaligned.load(), 0u);
    EXPECT_EQ(small_runs.load(), 200);
    EXPECT_GT(census::made.load(), 0);
    EXPECT_EQ(census::made.load(), census::gone.load());
}

// sleep_for, now a conversion to sleep_until in the header, never wakes early
// and lets other processes run meanwhile.
TEST_P(public_headers, sleep_for_waits_at_least_its_duration_while_others_run) {
    std::atomic<int> others{0};
    std::chrono::steady_clock::duration slept{};
    csp_test::run_watched(
        [&] {
            csp::par(
                [&] {
                    const auto t0 = std::chrono::steady_clock::now();
                    csp::sleep_for(20ms);
                    slept = std::chrono::steady_clock::now() - t0;
                },
                [&] {
                    for (int i = 0; i < 100; ++i) {
                        ++others;
                        csp::yield();
                    }
                });
        },
        opts());
    EXPECT_GE(slept, 20ms);
    EXPECT_EQ(others.load(), 100);
}

// yield() tells a lone process (false) from one that let another run (true).
TEST(public_headers_one_thread, yield_says_whether_another_process_ran) {
    bool alone = true;
    int with_partner = 0;
    csp_test::run_watched([&] { alone = csp::yield(); });
    csp_test::run_watched([&] {
        csp::par(
            [&] {
                for (int i = 0; i < 10; ++i) with_partner += csp::yield() ? 1 : 0;
            },
            [&] {
                for (int i = 0; i < 20; ++i) csp::yield();
            });
    });
    EXPECT_FALSE(alone);
    EXPECT_EQ(with_partner, 10);
}

}  // namespace
