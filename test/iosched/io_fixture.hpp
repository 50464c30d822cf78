#pragma once
// IO scheduler suites run on every backend, on one worker thread and on two.
#include <ostream>
#include <string>

#include "iosched/backend.hpp"
#include "iosched/iosched.hpp"
#include "test/csp/helpers.hpp"

namespace csp_test {

struct io_config {
    std::size_t threads;
    csp::io::backend_kind backend;
};

// How ctest's listing and gtest show a configuration (not its bytes).
inline void PrintTo(const io_config& c, std::ostream* os) {
    *os << csp::io::name(c.backend) << " on " << c.threads << (c.threads == 1 ? " thread" : " threads");
}

class io_suite : public ::testing::TestWithParam<io_config> {
protected:
    csp::runtime_options opts() const { return {.threads = GetParam().threads}; }
    // Call first thing in the root process.
    csp::io::scheduler_handle start() const { return csp::io::start_scheduler({.backend = GetParam().backend}); }
    bool single_thread_poll() const {
        return GetParam().threads == 1 && GetParam().backend == csp::io::backend_kind::poll;
    }
};

// Waits until the scheduler has at least n armed registrations (the processes
// under test have reached their waits). Call from a process.
inline void wait_until_armed(const csp::io::scheduler_handle& s, std::size_t n = 1) {
    while (s.stats().armed < n) csp::sleep_for(std::chrono::milliseconds(1));
}

// Waits (a bounded time) until the scheduler holds no registration. The
// scheduler updates its set after it has answered, so a process that was just
// answered may look before the update.
inline bool set_empties(const csp::io::scheduler_handle& s) {
    for (int i = 0; i < 2000; ++i) {
        if (s.stats().fds == 0 && s.stats().armed == 0) return true;
        csp::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
}

inline std::string io_config_name(const ::testing::TestParamInfo<io_config>& info) {
    return std::string(csp::io::name(info.param.backend)) + "_" + std::to_string(info.param.threads) + "_threads";
}

}  // namespace csp_test

#define CSP_ON_EVERY_IO_CONFIG(suite)                                                                   \
    INSTANTIATE_TEST_SUITE_P(, suite,                                                                    \
                             ::testing::Values(csp_test::io_config{1, csp::io::backend_kind::poll},      \
                                               csp_test::io_config{2, csp::io::backend_kind::poll},      \
                                               csp_test::io_config{1, csp::io::backend_kind::epoll},     \
                                               csp_test::io_config{2, csp::io::backend_kind::epoll},     \
                                               csp_test::io_config{4, csp::io::backend_kind::poll},      \
                                               csp_test::io_config{4, csp::io::backend_kind::epoll}),    \
                             csp_test::io_config_name)
