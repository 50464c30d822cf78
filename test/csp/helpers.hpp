#pragma once
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <string>
#include <thread>

#include <unistd.h>

#include <gtest/gtest.h>

#include "csp/csp.hpp"

namespace csp_test {

// Every thread's stack of this process, to stderr, where gdb is installed
// and may attach (a rare hang in CI then leaves more than its test's name).
inline void dump_stacks() {
    const std::string command = "command -v gdb >/dev/null 2>&1 && gdb -p " + std::to_string(::getpid()) +
                                " -batch -ex 'thread apply all bt' 2>/dev/null | head -n 600 >&2";
    if (std::system(command.c_str()) != 0) std::fprintf(stderr, "watchdog: no stacks (gdb missing or refused)\n");
    std::fflush(stderr);
}

// Runs `f` on its own thread; if it has not finished after `limit`, the test
// fails and the whole binary exits: a hang must never pass as a slow test.
// The stacks of every thread go to stderr first (dump_stacks).
template <class F>
void with_watchdog(F&& f, std::chrono::seconds limit = std::chrono::seconds(30)) {
    std::packaged_task<void()> task(std::forward<F>(f));
    auto done = task.get_future();
    std::thread t(std::move(task));
    if (done.wait_for(limit) != std::future_status::ready) {
        std::fprintf(stderr, "watchdog: test still running after %llds, giving up\n",
                     static_cast<long long>(limit.count()));
        std::fflush(stderr);
        dump_stacks();
        std::_Exit(3);
    }
    t.join();
    done.get();  // rethrows a failure of f
}

// csp::run under the watchdog: for tests where a wrong deadlock verdict
// would otherwise hang.
template <class F>
void run_watched(F&& root, csp::runtime_options o = {}) {
    with_watchdog([&] { csp::run(std::forward<F>(root), o); });
}

// csp::run under the watchdog, expecting it to report a deadlock: returns
// the report (empty, with a test failure, if run() returned instead).
inline std::string deadlock_report(const std::function<void()>& root, csp::runtime_options o) {
    std::string report;
    with_watchdog([&] {
        try {
            csp::run(root, o);
            ADD_FAILURE() << "run() returned instead of reporting a deadlock";
        } catch (const csp::deadlock_error& e) {
            report = e.what();
        }
    });
    return report;
}

// Reads values into `f` until the channel ends with an `End` error
// (csp::poisoned_error or csp::retired_error); any other error propagates.
template <class End, class T, class F>
void read_until(const csp::reader<T>& r, F&& f) {
    try {
        for (;;) f(r.read());
    } catch (const End&) {
    }
}

// Suites that run on one, two and four worker threads (four on two cores: more
// workers than cores, as on a busy machine).
class on_threads : public ::testing::TestWithParam<std::size_t> {
protected:
    csp::runtime_options opts() const { return {.threads = GetParam()}; }
};

inline std::string thread_name(const ::testing::TestParamInfo<std::size_t>& info) {
    return std::to_string(info.param) + "_threads";
}

}  // namespace csp_test

#define CSP_ON_1_2_AND_4_THREADS(suite) \
    INSTANTIATE_TEST_SUITE_P(, suite, ::testing::Values(std::size_t{1}, std::size_t{2}, std::size_t{4}), \
                             csp_test::thread_name)
