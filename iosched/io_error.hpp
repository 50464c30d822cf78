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

    io_error(int fd, condition c, const std::string& message)
        : csp::error("fd " + std::to_string(fd) + ": " + message), fd_(fd), condition_(c) {}

    int fd() const noexcept { return fd_; }
    condition cond() const noexcept { return condition_; }

private:
    int fd_;
    condition condition_;
};

}  // namespace csp::io
