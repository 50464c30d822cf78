#pragma once
// The error a process gets instead of readiness. Every message names the file
// descriptor, the condition, and what the process was waiting to do:
//
//   fd 7: peer hung up (POLLHUP) while waiting to write
//   fd 9: not an open file descriptor (POLLNVAL) while waiting to read
//   fd 5: error condition (POLLERR: Connection reset by peer) while waiting to read
//   fd 4: closed by csp::io::close while waiting to read
//   fd 4: the IO scheduler has stopped (its runtime ended) while waiting to read
//
// After an io_error the descriptor is still the caller's (unless the condition
// is `closed`): a reader may still drain data that arrived before a hang-up.
#include <string>

#include "csp/error.hpp"

namespace csp::io {

class io_error : public csp::error {
public:
    enum class condition {
        error,       // POLLERR; the message carries the socket's pending error if it has one
        hangup,      // POLLHUP with nothing left to do in the awaited direction
        invalid_fd,  // POLLNVAL: the descriptor is not open
        closed,      // csp::io::close() closed it while this process waited
        stopped,     // the IO scheduler has ended
    };

    io_error(int fd, condition c, const std::string& message, int system_error = 0)
        : csp::error("fd " + std::to_string(fd) + ": " + message), fd_(fd), condition_(c), errno_(system_error) {}

    int fd() const noexcept { return fd_; }
    condition cond() const noexcept { return condition_; }
    // The socket's pending error (an errno value) when the condition is
    // `error` and the socket had one, else 0. Reading it cleared it from
    // the socket: this is the only place it is kept (a refused connect
    // learns ECONNREFUSED here).
    int system_error() const noexcept { return errno_; }

private:
    int fd_;
    condition condition_;
    int errno_;
};

}  // namespace csp::io
