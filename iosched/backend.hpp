#pragma once
// The system call under the IO scheduler, behind one interface:
//
//   poll   (default) ppoll over an array kept in step with the fd set. Cost per
//          wait grows with the number of registered fds. Sees a descriptor
//          closed behind its back (POLLNVAL).
//   epoll  for thousands of mostly idle fds: cost per wait grows with the
//          number of *ready* fds. A descriptor closed without csp::io::close
//          silently leaves the epoll set, so its waiter would never hear.
//
// Both include the scheduler's self-pipe. Only the scheduler's process and the
// one idle worker polling on its behalf touch a backend, never at once (see
// handover.hpp), so backends need no locks.
#include <ctime>
#include <memory>
#include <string_view>
#include <vector>

#include "csp/waiter.hpp"
#include "iosched/self_pipe.hpp"

namespace csp::io {

enum class backend_kind { poll, epoll };

std::string_view name(backend_kind k);

namespace detail {

struct fd_event {
    int fd;
    short revents;  // POLLIN, POLLOUT, POLLERR, POLLHUP, POLLNVAL
};

class backend {
public:
    virtual ~backend() = default;

    // The events wanted for `fd` from now on (POLLIN | POLLOUT, or 0 for "none
    // now, but keep the fd"). After set_interest(fd, 0) the fd is reported no
    // more, not even for POLLHUP or POLLERR.
    virtual void set_interest(int fd, short events) = 0;
    // Drop `fd` entirely. Call before the fd is closed.
    virtual void forget(int fd) = 0;
    // Blocks until a wanted event, a wake-up, or `until` (a past time polls
    // without blocking). Appends the wanted events that occurred to `out`;
    // returns whether a wake-up was consumed.
    virtual bool wait(clock::time_point until, std::vector<fd_event>& out) = 0;
    // Appends the wanted events that occurred, without blocking and without
    // consuming a wake-up: for polls that never block (the scheduler
    // process's own, a busy worker's). A wake-up in the pipe may be meant
    // for the idle thread about to poll on the scheduler's behalf
    // (handover.hpp invariant 5); taken here, it would leave that thread
    // blocked in its poll although it was told to look for work.
    virtual void poll_now(std::vector<fd_event>& out) = 0;

    // A wake-up is on its way or waiting in the pipe.
    bool wake_pending() const noexcept { return pipe_.pending(); }

    // Any thread: interrupt a wait() in progress (or make the next return at once).
    bool wake() noexcept { return pipe_.wake(); }

protected:
    self_pipe pipe_;
};

std::unique_ptr<backend> make_backend(backend_kind k);

// Timeout arguments for ppoll / epoll_pwait2: nullptr means wait forever.
struct timespec_until {
    explicit timespec_until(clock::time_point until);
    const struct ::timespec* get() const noexcept { return forever_ ? nullptr : &ts_; }

private:
    struct ::timespec ts_{};
    bool forever_ = false;
};

}  // namespace detail
}  // namespace csp::io
