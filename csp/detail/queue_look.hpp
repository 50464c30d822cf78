#pragma once
// When an idle worker may steal from another worker's queue.
//
// A thief does not take a fiber the owner is about to run: a steal moves the
// fiber's stack and the channels it uses to another core, so a queue is
// stealable only once it has held work for tuning::steal_delay. "Held work"
// is read from the queue's counters (shared_ready_queue): at each look the
// thief notes how many fibers had been pushed, how many takes had left the
// queue empty (drains), and when. At a later look the queue has held work
// ever since if
//   - a fiber present at the noted look is still there (fewer takes than
//     the pushes noted): one process has waited the whole time; or
//   - no take has emptied it since (the same drains): its owner always had
//     another fiber to run, though each may have waited only a moment. Two
//     processes that yield to each other in turn on one worker are like
//     this: each waits only while the other runs, and a rule that timed
//     single fibers would leave them sharing one core for good.
// Otherwise the queue ran dry meanwhile and the thief starts a new note.
// A yield does not count as a drain: Boost picks the next fiber before it
// queues the yielding one (turn_state::yielding).
#include <chrono>
#include <cstdint>

namespace csp::detail {

class queue_look {
public:
    using time_point = std::chrono::steady_clock::time_point;

    // Whether the queue, now holding work with these counters, has held
    // work for `delay` by this look and the last one; starts a new note if
    // it ran dry between them. The first look always starts one.
    bool held_for(std::uint64_t pushes, std::uint64_t takes, std::uint64_t drains, time_point now,
                  std::chrono::steady_clock::duration delay) noexcept {
        if (takes >= pushes_ && drains != drains_) {
            pushes_ = pushes;
            drains_ = drains;
            since_ = now;
            return false;
        }
        return now - since_ >= delay;
    }

private:
    std::uint64_t pushes_ = 0;
    std::uint64_t drains_ = ~std::uint64_t{0};  // no queue drains that often: a first look notes
    time_point since_{};
};

}  // namespace csp::detail
