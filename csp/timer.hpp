#pragma once
// Time for processes: sleeping blocks only the calling fiber (or, called from
// a plain thread, that thread). A sleeping process is never reported as
// deadlocked: its timer will wake it. For a deadline among other events use
// csp::timeout / csp::deadline guards in a select (alt.hpp).
#include <chrono>

#include <boost/fiber/operations.hpp>

#include "csp/waiter.hpp"

namespace csp {

inline void sleep_until(clock::time_point t) { boost::this_fiber::sleep_until(t); }

template <class Rep, class Period>
void sleep_for(std::chrono::duration<Rep, Period> d) {
    boost::this_fiber::sleep_for(d);
}

// Let other ready processes run.
inline void yield() { boost::this_fiber::yield(); }

}  // namespace csp
