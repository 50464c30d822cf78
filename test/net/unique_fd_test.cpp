// unique_fd closes its descriptor exactly once. Built with -Wl,--wrap=close
// so that every close(2) of the program (the IO scheduler's too) is counted.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>

#include "csp/runtime.hpp"
#include "iosched/iosched.hpp"
#include "net/socket.hpp"

extern "C" int __real_close(int fd);

namespace {
std::mutex counted_lock;
std::map<int, int> closes;  // fd -> calls of close(2)
}  // namespace

extern "C" int __wrap_close(int fd) {
    {
        std::lock_guard lk(counted_lock);
        ++closes[fd];
    }
    return __real_close(fd);
}

namespace {
int closes_of(int fd) {
    std::lock_guard lk(counted_lock);
    return closes[fd];
}
void forget(int fd) {
    std::lock_guard lk(counted_lock);
    closes.erase(fd);
}
}  // namespace

// Regression: when the IO scheduler's close(2) reported an error, reset()
// closed the number again itself, though the scheduler had already released
// it and another connection could have it by then.
TEST(unique_fd, reset_closes_once_even_when_the_schedulers_close_reports_an_error) {
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    // A number far above what the runtime opens, no longer open: the
    // scheduler's close(2) of it fails with EBADF.
    const int gone = ::fcntl(p[0], F_DUPFD, 900);
    ASSERT_GE(gone, 900);
    __real_close(gone);
    __real_close(p[0]);
    __real_close(p[1]);
    forget(gone);
    csp::run([&] {
        csp::net::unique_fd fd(gone);
        fd.reset();
    });
    EXPECT_EQ(closes_of(gone), 1) << "fd " << gone << " was closed more than once";
}

TEST(unique_fd, reset_inside_a_runtime_closes_through_the_scheduler_once) {
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    forget(p[0]);
    csp::run([&] {
        csp::net::unique_fd fd(p[0]);
        fd.reset();
        EXPECT_EQ(::fcntl(p[0], F_GETFD), -1);  // closed
    });
    EXPECT_EQ(closes_of(p[0]), 1);
    __real_close(p[1]);
}

TEST(unique_fd, reset_outside_a_runtime_closes_once) {
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    forget(p[0]);
    {
        csp::net::unique_fd fd(p[0]);
    }
    EXPECT_EQ(closes_of(p[0]), 1);
    EXPECT_EQ(::fcntl(p[0], F_GETFD), -1);
    __real_close(p[1]);
}
