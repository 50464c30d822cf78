#include "csp/timer.hpp"

#include <boost/fiber/operations.hpp>

#include "csp/detail/exception_state.hpp"
#include "csp/detail/scheduler_policy.hpp"
#include "csp/detail/turn.hpp"

namespace csp {

void sleep_until(clock::time_point t) {
    const detail::exception_state own;
    boost::this_fiber::sleep_until(t);
}

bool yield() {
    if (detail::lone_yield()) return false;
    detail::turn_state* const before = detail::this_thread_turn_state();
    const std::uint64_t picks = before->picks;
    {
        const detail::exception_state own;
        before->yielding = true;
        boost::this_fiber::yield();
    }
    // Resumed by another worker: others ran meanwhile. On the same worker,
    // the caller's own pick is one (the policies count processes they pick,
    // not Boost's dispatcher); any other came between.
    detail::turn_state* const after = detail::this_thread_turn_state();
    return after != before || after->picks - picks > 1;
}

void yield_to_io() {
    if (auto* clock = detail::busy_poll_of_this_thread) clock->force(detail::tuning::yield_to_io_gap);
    // A look that is not due yet (the last is under the gap old) and nothing
    // else ready: the round would only pick the caller again.
    if (detail::lone_yield()) return;
    const detail::exception_state own;
    detail::this_thread_turn_state()->yielding = true;
    boost::this_fiber::yield();
}

}  // namespace csp
