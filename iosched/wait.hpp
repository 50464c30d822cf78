#pragma once
// One-off waits on a file descriptor, for process code.
//
//   csp::io::wait_readable(fd);          // block this process until fd is readable
//   csp::io::wait_writable(fd);
//   switch (csp::select(csp::io::readable(sock_a), csp::io::readable(sock_b),
//                       csp::input(commands, cmd), csp::timeout(500ms))) { ... }
//   csp::io::close(fd);                  // close, failing any process waiting on fd
//
// Each wait registers the fd with the scheduler once, as a one-shot; a guard
// that does not fire withdraws its registration when the select is over, so
// the fd is never reported to a process that has moved on. Loops that wait on
// the same fd again and again are cheaper with a csp::io::watch (watch.hpp).
// What a wait reports, and when it throws io_error instead, is in watch.hpp.
//
// Close watched descriptors with csp::io::close: it removes the fd from the
// set before closing it, so a waiter hears "closed" at once (and with the
// epoll backend, a plain close would leave it waiting for ever).
#include "iosched/watch.hpp"

namespace csp::io {

// Blocks the calling process (or thread, with a handle) until fd is ready.
io_events wait_for(const scheduler_handle& s, int fd, interest in);
inline io_events wait_readable(int fd) { return wait_for(this_scheduler(), fd, interest::read); }
inline io_events wait_writable(int fd) { return wait_for(this_scheduler(), fd, interest::write); }
inline io_events wait_readable(const scheduler_handle& s, int fd) { return wait_for(s, fd, interest::read); }
inline io_events wait_writable(const scheduler_handle& s, int fd) { return wait_for(s, fd, interest::write); }

// Readiness of one fd as an alternation guard; registers on first use.
class fd_guard final : public csp::guard_base<fd_guard> {
public:
    // On commit the events land in *out, if given.
    fd_guard(int fd, interest in, io_events* out = nullptr) : watch_(fd, in), guard_(watch_, out ? *out : events_) {}
    fd_guard(const fd_guard&) = delete;
    fd_guard& operator=(const fd_guard&) = delete;

    bool try_complete() override { return guard_.try_complete(); }
    bool enable(csp::wait_node& n) override { return guard_.enable(n); }
    void disable(csp::wait_node& n) override { guard_.disable(n); }
    void complete(csp::wait_node& n) override { guard_.complete(n); }
    void describe(std::string& out) const override { guard_.describe(out); }

private:
    watch watch_;
    io_events events_;  // where the events land when nobody asked for them
    watch_guard guard_;
};

inline fd_guard readable(int fd) { return fd_guard(fd, interest::read); }
inline fd_guard writable(int fd) { return fd_guard(fd, interest::write); }
inline fd_guard readable(int fd, io_events& out) { return fd_guard(fd, interest::read, &out); }
inline fd_guard writable(int fd, io_events& out) { return fd_guard(fd, interest::write, &out); }

// Closes fd through the scheduler: registrations of fd are dropped and their
// waiters get io_error(closed); then close(2). Throws io_error(invalid_fd) if
// close(2) fails.
void close(const scheduler_handle& s, int fd);
inline void close(int fd) { close(this_scheduler(), fd); }

}  // namespace csp::io
