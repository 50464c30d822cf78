// The hand-over between the IO scheduler and the worker that polls for it:
// which polls may take a wake-up meant for the idle worker.
#include <gtest/gtest.h>

#include <chrono>

#include "iosched/handover.hpp"
#include "iosched/registration_table.hpp"

namespace io = csp::io;

namespace {

// Regression (a_busy_poll_leaves_the_idle_workers_wake_up): a busy worker
// polls for the parked scheduler now and then without blocking. That poll
// drained the self-pipe, so a wake-up sent to the idle worker that had begun
// a poll attempt (it was told to look for work) was gone when that worker's
// poll began: it blocked in ppoll for good with every other worker asleep
// (io_stress's flood on four workers pinned to one core, about one run in
// 100). A busy poll now leaves the wake-up for the poll that may block.
TEST(io_handover, a_busy_poll_leaves_the_idle_workers_wake_up) {
    for (const auto kind : {io::backend_kind::poll, io::backend_kind::epoll}) {
        SCOPED_TRACE(std::string(io::name(kind)));
        const auto b = io::detail::make_backend(kind);
        io::detail::registration_table table(*b);
        io::detail::handover h(*b, table, std::chrono::microseconds(0));
        io::detail::handover::events_guard parked(h);
        csp::wait_node n;
        ASSERT_FALSE(parked.enable(n)) << "nothing was handed over yet";

        h.wake();  // for an idle worker about to poll
        ASSERT_TRUE(h.poll_until(csp::clock::time_point{})) << "the busy poll ran";
        EXPECT_TRUE(b->wake_pending()) << "the busy poll took the wake-up";
        const auto start = std::chrono::steady_clock::now();
        ASSERT_TRUE(h.poll_until(csp::clock::now() + std::chrono::seconds(20)));
        EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10))
            << "the idle worker's poll waited for its deadline: the wake-up was lost";
        EXPECT_FALSE(b->wake_pending()) << "the poll that may block consumes the wake-up";
        parked.disable(n);
    }
}

}  // namespace
