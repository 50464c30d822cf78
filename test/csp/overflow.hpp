#pragma once
// A process that overflows its stack, for the guard-page tests
// (stack_guard_test.cpp, and over UCX in test/net/ucx_test.cpp).
#include <cstddef>
#include <limits>

namespace csp_test {

// Recursion the compiler can neither drop nor turn into a loop: each frame
// keeps 256 bytes it reads after the call returns. Returns the sum of the
// depths' low bytes.
[[gnu::noinline]] inline int descend(std::size_t depth, std::size_t limit) {
    volatile char frame[256];
    frame[0] = static_cast<char>(depth);
    if (depth >= limit) return frame[0];
    return descend(depth + 1, limit) + frame[0];
}

// A limit the compiler cannot see: recursion until the stack ends.
inline volatile std::size_t endless = std::numeric_limits<std::size_t>::max();

}  // namespace csp_test
