#pragma once
// TCP socket plumbing for process code: every wait goes through the IO
// scheduler, so a process blocked here blocks no other process.
//
// Descriptors are non-blocking with TCP_NODELAY. Partial reads and writes are
// ordinary: the helpers loop, retry EINTR, and wait on EAGAIN; they throw
// net_error naming the address or descriptor when the peer is gone or a
// deadline passes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "csp/channel.hpp"
#include "csp/waiter.hpp"
#include "net/endpoint.hpp"
#include "net/errors.hpp"

namespace csp::net {

// Owns a descriptor; closes it through the IO scheduler when there is one.
class unique_fd {
public:
    unique_fd() = default;
    explicit unique_fd(int fd) noexcept : fd_(fd) {}
    unique_fd(unique_fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    unique_fd& operator=(unique_fd&& o) noexcept {
        if (this != &o) {
            reset();
            fd_ = std::exchange(o.fd_, -1);
        }
        return *this;
    }
    ~unique_fd() { reset(); }

    int get() const noexcept { return fd_; }
    int release() noexcept { return std::exchange(fd_, -1); }
    void reset() noexcept;
    explicit operator bool() const noexcept { return fd_ >= 0; }

private:
    int fd_ = -1;
};

// A listening socket on host:port (port 0: any free port); `bound` gets the
// address actually bound. `congestion`, if not empty, is the TCP congestion
// control its connections start with (set on the listener, which they
// inherit; best effort: the system's if the kernel refuses it).
unique_fd listen_on(const endpoint& at, endpoint& bound, int backlog = 128, const std::string& congestion = {});

// The process (EMFILE) or the system (ENFILE, ENOBUFS, ENOMEM) has no
// descriptor or buffer for another connection: a state to wait out, not a
// broken listener.
class out_of_descriptors : public net_error {
public:
    using net_error::net_error;
};

// Accepts one pending connection, or returns an empty unique_fd (EAGAIN).
// Throws out_of_descriptors, or net_error for a broken listener.
unique_fd accept_from(int listener);

// What may cut a wait short: once this channel is poisoned, a wait that
// watches it throws gave_up instead of going on.
using give_up = const csp::reader<bool>*;
class gave_up : public net_error {
public:
    using net_error::net_error;
};

// Connects to `to` (host names resolved with Boost.Asio), waiting at most
// until `deadline` (or until `stop` is poisoned). `congestion` as for
// listen_on: set before the connection starts.
unique_fd connect_to(const endpoint& to, clock::time_point deadline, give_up stop = nullptr,
                     const std::string& congestion = {});

// The connection ended (end of file, or reset) before the first byte a
// read_exact expected, or before write_all could write its first byte (the
// peer had hung up: EPIPE, ECONNRESET): for a frame, a hang-up between
// frames rather than a cut one.
class closed_before_data : public net_error {
public:
    using net_error::net_error;
};

// Reads exactly n bytes / writes all n bytes, or throws net_error (`what`
// names the connection in the message; closed_before_data if not one byte
// came, or none could go).
void read_exact(int fd, void* buf, std::size_t n, clock::time_point deadline, const std::string& what,
                give_up stop = nullptr);
void write_all(int fd, const void* buf, std::size_t n, clock::time_point deadline, const std::string& what,
               give_up stop = nullptr);

// Whether both ends of the connection on fd are on this host: the peer's
// address is a loopback one, or the same as ours (the kernel carries a
// connection to one of the host's own addresses over loopback).
bool host_local(int fd);

// The TCP congestion control a new socket of this host gets (the system's
// default), or "" if it cannot be read.
std::string system_congestion_control();

// Gives the connection (or the listener) on fd the TCP congestion control
// named (the kernel lists what it has in
// net.ipv4.tcp_available_congestion_control, and what an unprivileged
// process may choose in net.ipv4.tcp_allowed_congestion_control); throws
// net_error naming the algorithm and the kernel's reason if it refuses.
// Set it before a connection starts, not after: an established connection
// switched away from BBR keeps BBR's pacing on (measured: an 8-rank 1 MiB
// allreduce took 3.5-3.7 ms switched after connecting to reno, 2.5-2.7 set
// before, 3.1-3.4 under BBR).
void set_congestion_control(int fd, const std::string& algorithm);

// The text of errno value e.
std::string error_text(int e);

}  // namespace csp::net
