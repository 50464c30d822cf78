// A process keeps its own "exception being handled" and count of exceptions
// in flight across every wait, on any worker (csp/detail/exception_state.hpp).
#include <atomic>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "csp/detail/exception_state.hpp"
#include "helpers.hpp"

namespace {

using namespace std::chrono_literals;

class exception_state : public csp_test::on_threads {};
CSP_ON_1_2_AND_4_THREADS(exception_state);

std::string message_of(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& x) {
        return x.what();
    }
}

// Regression: the C++ runtime's stack of handled exceptions is per thread.
// Eight processes that each block inside their handler stacked their
// exceptions on one thread's stack, so every one of them then saw the last
// one's as its own (std::current_exception, `throw;`), and on several workers
// `throw;` after a move to another thread called std::terminate.
TEST_P(exception_state, processes_blocked_in_their_handlers_each_keep_their_own_exception) {
    constexpr std::size_t n = 8;
    constexpr int rounds = 50;
    std::atomic<int> own_current{0}, own_rethrown{0}, tokens{0};
    csp_test::run_watched(
        [&] {
            // A ring: each process passes a token on from inside its handler,
            // so the handlers are suspended and resumed in turn many times.
            std::vector<csp::channel<int>> ring(n);
            csp::barrier all(n);
            csp::par_for(n, [&](std::size_t i) {
                const std::string mine = "process " + std::to_string(i);
                for (int r = 0; r < rounds; ++r) {
                    try {
                        try {
                            throw std::runtime_error(mine);
                        } catch (const std::runtime_error&) {
                            all.sync();  // every process is inside its handler
                            if (i == 0) ring[1].writer().write(r);
                            const int got = ring[i].reader().read();
                            ++tokens;
                            if (i != 0) ring[(i + 1) % n].writer().write(got);
                            all.sync();
                            if (message_of(std::current_exception()) == mine) ++own_current;
                            throw;
                        }
                    } catch (const std::runtime_error& e) {
                        if (e.what() == mine) ++own_rethrown;
                    }
                }
            });
        },
        opts());
    EXPECT_EQ(tokens.load(), int(n) * rounds);
    EXPECT_EQ(own_current.load(), int(n) * rounds);
    EXPECT_EQ(own_rethrown.load(), int(n) * rounds);
}

// Regression: the count of exceptions in flight is per thread too. A
// destructor that waited during unwinding left the count raised on its
// thread for every other process there, and once it resumed on another
// worker that thread's count was decremented below zero by the catch.
TEST_P(exception_state, a_destructor_that_waits_while_unwinding_keeps_its_count) {
    constexpr int rounds = 100;
    std::atomic<int> in_flight_while_waiting{0}, in_flight_after_waiting{0}, others_clear{0}, after_catch{0};
    csp_test::run_watched(
        [&] {
            csp::channel<int> go;
            csp::channel<int> back;
            struct waits_on_destruction {
                const csp::channel<int>& go;
                const csp::channel<int>& back;
                std::atomic<int>& before;
                std::atomic<int>& after;
                ~waits_on_destruction() {
                    if (std::uncaught_exceptions() == 1) ++before;
                    back.writer().write(0);
                    (void)go.reader().read();
                    if (std::uncaught_exceptions() == 1) ++after;
                }
            };
            csp::par(
                [&] {
                    for (int r = 0; r < rounds; ++r) {
                        try {
                            waits_on_destruction w{go, back, in_flight_while_waiting, in_flight_after_waiting};
                            throw std::runtime_error("unwinding");
                        } catch (const std::runtime_error&) {
                            if (std::uncaught_exceptions() == 0) ++after_catch;
                        }
                    }
                },
                [&] {
                    for (int r = 0; r < rounds; ++r) {
                        (void)back.reader().read();
                        csp::yield();
                        if (std::uncaught_exceptions() == 0 && std::current_exception() == nullptr) ++others_clear;
                        go.writer().write(r);
                    }
                });
        },
        opts());
    EXPECT_EQ(in_flight_while_waiting.load(), rounds);
    EXPECT_EQ(in_flight_after_waiting.load(), rounds);
    EXPECT_EQ(others_clear.load(), rounds);
    EXPECT_EQ(after_catch.load(), rounds);
    EXPECT_EQ(std::uncaught_exceptions(), 0);
}

// Regression: a process started by a parent that was inside a handler saw
// the parent's exception as its own.
TEST_P(exception_state, a_process_started_from_a_handler_starts_with_none) {
    std::atomic<int> clear{0}, parent_kept{0};
    csp_test::run_watched(
        [&] {
            for (int r = 0; r < 20; ++r) {
                try {
                    throw std::logic_error("parent's");
                } catch (const std::logic_error&) {
                    csp::par_for(4, [&](std::size_t) {
                        if (std::current_exception() == nullptr && std::uncaught_exceptions() == 0) ++clear;
                        csp::sleep_for(100us);
                        if (std::current_exception() == nullptr) ++clear;
                    });
                    if (message_of(std::current_exception()) == "parent's") ++parent_kept;
                }
            }
        },
        opts());
    EXPECT_EQ(clear.load(), 20 * 4 * 2);
    EXPECT_EQ(parent_kept.load(), 20);
}

// run() called from inside a handler: its processes start clear, and the
// caller's exception is still the one being handled when run() returns.
TEST_P(exception_state, run_from_inside_a_handler_keeps_the_callers_exception) {
    std::atomic<int> clear{0};
    try {
        throw std::out_of_range("caller's");
    } catch (const std::out_of_range&) {
        // On this thread, not under the watchdog's: the caller's handler is
        // on this thread's stack of handled exceptions.
        csp::run(
            [&] {
                csp::par([&] { clear += std::current_exception() == nullptr; },
                         [&] { csp::yield(); clear += std::current_exception() == nullptr; });
            },
            opts());
        EXPECT_EQ(message_of(std::current_exception()), "caller's");
    }
    EXPECT_EQ(clear.load(), 2);
    EXPECT_TRUE(csp::detail::exception_state::thread_is_clear());
}

// A timed wait (select with a deadline, sleep) inside a handler: the other
// suspension points carry the state too.
TEST_P(exception_state, timed_waits_inside_handlers_keep_the_exception) {
    constexpr std::size_t n = 6;
    std::atomic<int> kept{0};
    csp_test::run_watched(
        [&] {
            csp::par_for(n, [&](std::size_t i) {
                const std::string mine = std::to_string(i);
                try {
                    throw std::runtime_error(mine);
                } catch (const std::runtime_error&) {
                    csp::channel<int> never;
                    const auto r = never.reader();
                    int v = 0;
                    for (int k = 0; k < 5; ++k) {
                        (void)csp::select(csp::input(r, v), csp::timeout(200us));
                        csp::sleep_for(50us);
                        csp::yield();
                        if (message_of(std::current_exception()) == mine) ++kept;
                    }
                }
            });
        },
        opts());
    EXPECT_EQ(kept.load(), int(n) * 5);
}

}  // namespace
