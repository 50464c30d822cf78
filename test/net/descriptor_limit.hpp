#pragma once
// Tests that fill the descriptor table skip themselves under the sanitizers.
// UndefinedBehaviorSanitizer's vptr check probes memory through a pipe of
// its own, so at the descriptor limit it reports every virtual call, in any
// thread, as one on an invalid object. The sanitizer build cannot run at
// the limit; the Release build runs these tests (unsanitized_tests).
#include <gtest/gtest.h>

#if defined(__SANITIZE_ADDRESS__)
#define SKIP_AT_THE_DESCRIPTOR_LIMIT_UNDER_SANITIZERS() \
    GTEST_SKIP() << "the sanitizers need descriptors of their own at the limit"
#else
#define SKIP_AT_THE_DESCRIPTOR_LIMIT_UNDER_SANITIZERS() (void)0
#endif
