#pragma once
// The deadline a wait of `d` from now has, saturated at both ends of the
// clock: a wait longer than the clock can count (hours::max(), a "forever"
// written as the largest duration) is a wait without end, not an overflow
// into the past that times out at once; a negative one is due now.
#include <chrono>
#include <ratio>

#include "csp/waiter.hpp"

namespace csp {

// `d` after `from` (a deadline already at the clock's end stays there).
template <class Rep, class Period>
clock::time_point deadline_after(clock::time_point from, std::chrono::duration<Rep, Period> d) {
    if (d <= d.zero()) return from;
    // Compared as floating point, which no duration overflows, with a second
    // to spare for its rounding: within that of the clock's end is the end.
    using seconds_f = std::chrono::duration<double>;
    const seconds_f room = std::chrono::duration_cast<seconds_f>(clock::time_point::max() - from) - seconds_f(1);
    if (std::chrono::duration_cast<seconds_f>(d) >= room) return clock::time_point::max();
    return from + std::chrono::ceil<clock::duration>(d);
}

template <class Rep, class Period>
clock::time_point deadline_after(std::chrono::duration<Rep, Period> d) {
    return deadline_after(clock::now(), d);
}

}  // namespace csp
