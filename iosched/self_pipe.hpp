#pragma once
// The self-pipe trick: a pipe whose read end sits in the poll set, so that
// any thread can interrupt a poll in progress by writing one byte.
//
// wake() writes at most one byte per poll: `pending_` is set by the waker that
// writes, and cleared by the poller *after* it has drained the pipe. So
// pending_ is never true with the pipe empty while a poll blocks. A wake that
// finds pending_ still set between the drain and the clear is not lost: the
// poll it was meant to interrupt has already returned.
#include <atomic>

namespace csp::io::detail {

class self_pipe {
public:
    self_pipe();
    ~self_pipe();
    self_pipe(const self_pipe&) = delete;
    self_pipe& operator=(const self_pipe&) = delete;

    int read_fd() const noexcept { return fds_[0]; }

    // Any thread. Returns whether a byte was written.
    bool wake() noexcept;

    // The poller, when read_fd() was reported readable.
    void drain() noexcept;

    bool pending() const noexcept { return pending_.load(std::memory_order_acquire); }

private:
    int fds_[2] = {-1, -1};
    std::atomic<bool> pending_{false};
};

}  // namespace csp::io::detail
