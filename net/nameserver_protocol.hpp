#pragma once
// The nameserver's protocol: text lines over TCP, one request, one answer.
//
//   REGISTER <job> <rank> <size> <host> <port>   rank -1: the lowest free one; size 0: the job's
//     -> OK <rank> <size>                        the connection stays open: closing it (or the
//     -> ERR <reason>                            node dying) removes the registration
//     <- GONE <rank>                             later, unasked, on that connection: another
//                                                node of the job ended its registration (and
//                                                right after OK, one per rank that ended before)
//     <- PROBE, DESCRIBE, DEADLOCK               the job-wide deadlock detector's waves, unasked
//                                                (deadlock_waves.hpp; the node answers QUIET,
//                                                BLOCKED, DESCRIBED)
//     -> FINAL <out> <in>                        unasked, the last line of a node that leaves
//                                                cleanly: its traffic counts, for the detector
//     <- STATUS <id>                             what are your processes doing? (csp-launch
//                                                --timeout); the node answers STATE <id> <text>,
//                                                one per program process, then STATED <id>
//   LOOKUP <job> <rank> <wait_ms>                waits up to wait_ms (at most 10 minutes) for
//                                                the rank to register
//     -> AT <host> <port> | ERR <reason>
//     -> ENDED <rank>                            at once: its registration ended while the job
//                                                lasted (it left, died or was killed)
//   LIST <job>
//     -> JOB <size> [<rank>=<host>:<port> ...]   (size 0 and no ranks: no such job)
//
// Jobs are created by their first registration, which also fixes their size
// (if given), and forgotten when their last node leaves. Job names are 1-200
// characters of [A-Za-z0-9._-]; a job has at most 2^20 nodes. Lines longer
// than 1 KiB are refused.
#include <optional>
#include <string>
#include <vector>

#include "csp/channel.hpp"
#include "csp/waiter.hpp"
#include "net/nameserver_words.hpp"
#include "net/socket.hpp"

namespace csp::net::detail {

// A connection that exchanges lines, for process code.
class line_connection {
public:
    explicit line_connection(unique_fd fd, std::string what) : fd_(std::move(fd)), what_(std::move(what)) {}

    // The next line without its '\n'; nullopt at end of file (or when `stop`
    // is poisoned). Throws net_error on a deadline, an error or a line too long.
    std::optional<std::string> read_line(clock::time_point deadline = clock::time_point::max(),
                                         const csp::reader<bool>* stop = nullptr);
    void write_line(const std::string& line, clock::time_point deadline = clock::time_point::max());

    int fd() const noexcept { return fd_.get(); }
    unique_fd release() noexcept { return std::move(fd_); }
    // Bytes read past the last line returned (the start of later lines).
    std::string unread() const { return buf_; }
    const std::string& what() const noexcept { return what_; }
    // read_line failed because the other end reset the connection (its
    // process was killed, or closed it with bytes unread).
    bool was_reset() const noexcept { return reset_; }
    // A whole line is already read: read_line returns it without waiting,
    // and the fd may never become readable for it.
    bool has_line() const noexcept { return buf_.find('\n') != std::string::npos; }

private:
    unique_fd fd_;
    std::string what_;
    std::string buf_;
    bool reset_ = false;
};


}  // namespace csp::net::detail
