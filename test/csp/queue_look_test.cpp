// When an idle worker may steal from another worker's queue
// (csp/detail/queue_look.hpp), look by look.
#include <gtest/gtest.h>

#include <chrono>

#include "csp/detail/queue_look.hpp"

namespace {

using namespace std::chrono_literals;
using csp::detail::queue_look;

constexpr auto delay = 4us;
const queue_look::time_point t0 = std::chrono::steady_clock::now();

TEST(queue_look, a_first_look_only_takes_note) {
    queue_look look;
    EXPECT_FALSE(look.held_for(1, 0, 0, t0 + 1h, delay));
    EXPECT_TRUE(look.held_for(1, 0, 0, t0 + 1h + delay, delay));
}

TEST(queue_look, a_fiber_that_waits_makes_the_queue_stealable_after_the_delay) {
    queue_look look;
    EXPECT_FALSE(look.held_for(1, 0, 0, t0, delay));
    EXPECT_FALSE(look.held_for(1, 0, 0, t0 + 3us, delay));
    EXPECT_TRUE(look.held_for(3, 0, 0, t0 + 4us, delay));
}

// Regression (two_processes_yielding_in_turn_on_one_worker_never_became_stealable):
// a queue was stealable only while a fiber seen at the last look still
// waited. Two processes that yield to each other in turn on one worker
// keep its queue holding one of them at every look, but never the same one
// for long: every fiber seen is taken within a body's time, the thief's note
// started over at each look, and the other worker stayed idle for good (a
// task graph's two workers shared one of two threads). A queue that has not
// run dry since the note is stealable too.
TEST(queue_look, two_processes_yielding_in_turn_on_one_worker_never_became_stealable) {
    queue_look look;
    EXPECT_FALSE(look.held_for(10, 9, 0, t0, delay));
    EXPECT_FALSE(look.held_for(20, 19, 0, t0 + 2us, delay));  // the fiber seen first has run
    EXPECT_TRUE(look.held_for(50, 49, 0, t0 + 5us, delay));
}

TEST(queue_look, a_queue_that_ran_dry_between_looks_starts_a_new_note) {
    queue_look look;
    EXPECT_FALSE(look.held_for(10, 9, 0, t0, delay));
    EXPECT_FALSE(look.held_for(20, 19, 1, t0 + 5us, delay));  // emptied once: noted anew at 5 us
    EXPECT_FALSE(look.held_for(30, 29, 1, t0 + 8us, delay));
    EXPECT_TRUE(look.held_for(40, 39, 1, t0 + 9us, delay));
}

}  // namespace
