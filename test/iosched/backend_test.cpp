// The backends under the IO scheduler: what a wait reports, and which polls
// consume a wake-up.
#include <gtest/gtest.h>

#include <poll.h>

#include <chrono>

#include "iosched/backend.hpp"
#include "test/iosched/fd_pair.hpp"

namespace io = csp::io;

// How ctest's listing and gtest show a backend (found by argument-dependent
// lookup, so in the enum's namespace).
namespace csp::io {
void PrintTo(backend_kind k, std::ostream* os) { *os << name(k); }
}  // namespace csp::io
using io::detail::fd_event;

namespace {

class io_backend : public ::testing::TestWithParam<io::backend_kind> {
protected:
    std::unique_ptr<io::detail::backend> b = io::detail::make_backend(GetParam());
};

// Long enough that a wait which misses its wake-up fails the test instead of
// passing by its deadline.
constexpr auto long_wait = std::chrono::seconds(20);

TEST_P(io_backend, a_wait_reports_a_ready_fd_and_nothing_else) {
    csp_test::fd_pair ready, idle;
    b->set_interest(ready.a(), POLLIN);
    b->set_interest(idle.a(), POLLIN);
    csp_test::put_byte(ready.b(), 'x');
    std::vector<fd_event> out;
    EXPECT_FALSE(b->wait(csp::clock::now() + long_wait, out));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].fd, ready.a());
    EXPECT_TRUE(out[0].revents & POLLIN);
}

TEST_P(io_backend, a_wake_up_ends_a_wait_once) {
    EXPECT_TRUE(b->wake());
    EXPECT_FALSE(b->wake()) << "a second wake-up before the poll writes nothing";
    std::vector<fd_event> out;
    EXPECT_TRUE(b->wait(csp::clock::now() + long_wait, out));
    EXPECT_TRUE(out.empty());
    EXPECT_FALSE(b->wake_pending());
    EXPECT_FALSE(b->wait(csp::clock::time_point{}, out)) << "the wake-up was consumed";
}

// Regression (a_wake_up_survives_the_schedulers_own_poll): the IO scheduler's
// process polls without blocking while it serves a stream of requests. That
// poll drained the self-pipe, so a wake-up sent to a worker that had begun a
// poll attempt (it was told to look for work) was gone by the time the
// worker's poll began, once the scheduler had parked: the worker blocked in
// ppoll with no fd armed and every process of the runtime waiting for it
// (io_stress's flood, four workers pinned to one core, about one run in 100).
TEST_P(io_backend, a_wake_up_survives_the_schedulers_own_poll) {
    csp_test::fd_pair ready;
    b->set_interest(ready.a(), POLLIN);
    csp_test::put_byte(ready.b(), 'x');
    ASSERT_TRUE(b->wake());
    std::vector<fd_event> out;
    b->poll_now(out);
    ASSERT_EQ(out.size(), 1u) << "poll_now reports what is ready";
    EXPECT_EQ(out[0].fd, ready.a());
    EXPECT_TRUE(b->wake_pending()) << "poll_now consumed the wake-up";
    out.clear();
    b->set_interest(ready.a(), 0);
    EXPECT_TRUE(b->wait(csp::clock::now() + long_wait, out)) << "the wake-up did not reach the next wait";
    EXPECT_TRUE(out.empty());
}

TEST_P(io_backend, poll_now_with_nothing_registered_leaves_a_wake_up) {
    ASSERT_TRUE(b->wake());
    std::vector<fd_event> out;
    b->poll_now(out);
    EXPECT_TRUE(out.empty());
    EXPECT_TRUE(b->wake_pending());
    EXPECT_TRUE(b->wait(csp::clock::now() + long_wait, out));
}

INSTANTIATE_TEST_SUITE_P(, io_backend, ::testing::Values(io::backend_kind::poll, io::backend_kind::epoll),
                         [](const auto& info) { return std::string(io::name(info.param)); });

}  // namespace
