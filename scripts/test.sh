#!/usr/bin/env bash
# The whole suite: install what is missing, then build and run every test in
# an AddressSanitizer + UndefinedBehaviorSanitizer build; build the Release
# libraries, tools, examples and benchmarks and run there the tests a
# sanitizer build skips (CSP_TEST_SET=unsanitized: stack depths, the
# descriptor limit, glibc's heap, a consumer that adds the source tree);
# then the libFuzzer targets (clang) for a few seconds each. Soak tests
# (label "soak") are left out; run them with:
#   ctest --test-dir build-sanitize -L soak (and build-fuzz).
#
# Every test in both builds took 28 minutes here (2 cores), most of it
# compiling the tests twice; now the sanitizer build alone runs every one.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh

# -Og -g1 (line tables, enough for symbolised reports): the sanitizer build
# compiles in about half the time RelWithDebInfo's -O2 -g takes (-Og: 13%
# less than -O1 over the whole build, its tests about as fast).
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-Og -g1 -DNDEBUG" \
      -DCSP_SANITIZE=ON -DCSP_BUILD_BENCH=OFF -DCSP_BUILD_EXAMPLES=ON -DCSP_TEST_SET=all >/dev/null
cmake --build build-sanitize -j2
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-sanitize -j2 -LE soak --output-on-failure

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCSP_TEST_SET=unsanitized >/dev/null
cmake --build build -j2
ctest --test-dir build -j2 -LE soak --output-on-failure

cmake -S fuzz -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ >/dev/null
cmake --build build-fuzz -j2
ctest --test-dir build-fuzz -LE soak --output-on-failure
