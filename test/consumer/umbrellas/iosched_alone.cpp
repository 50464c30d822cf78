// Only iosched/iosched.hpp: a process waits for a pipe to hold a byte.
#include <fcntl.h>
#include <unistd.h>

#include "iosched/iosched.hpp"

int iosched_alone() {
    int fds[2];
    if (::pipe2(fds, O_NONBLOCK) != 0) return -1;
    const int got = csp::run([&] {
        auto [wrote, read] = csp::par(
            [&] { return static_cast<int>(::write(fds[1], "x", 1)); },
            [&] {
                csp::io::wait_readable(fds[0]);
                char c = 0;
                return ::read(fds[0], &c, 1) == 1 && c == 'x' ? 7 : 0;
            });
        return wrote == 1 ? read : 0;
    });
    ::close(fds[0]);
    ::close(fds[1]);
    return got;
}
