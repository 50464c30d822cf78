#include "iosched/self_pipe.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "csp/error.hpp"

namespace csp::io::detail {

self_pipe::self_pipe() {
    if (::pipe2(fds_, O_NONBLOCK | O_CLOEXEC) != 0)
        throw csp::error(std::string("IO scheduler: cannot create its self-pipe: ") + std::strerror(errno));
}

self_pipe::~self_pipe() {
    ::close(fds_[0]);
    ::close(fds_[1]);
}

bool self_pipe::wake() noexcept {
    if (pending_.exchange(true, std::memory_order_acq_rel)) return false;
    const char byte = 1;
    // EAGAIN means the pipe is full of wake-ups already: the poll will return.
    while (::write(fds_[1], &byte, 1) < 0 && errno == EINTR) {
    }
    return true;
}

void self_pipe::drain() noexcept {
    char buf[64];
    for (;;) {
        const ssize_t n = ::read(fds_[0], buf, sizeof buf);
        if (n == static_cast<ssize_t>(sizeof buf)) continue;
        if (n < 0 && errno == EINTR) continue;
        break;
    }
    pending_.store(false, std::memory_order_release);
}

}  // namespace csp::io::detail
