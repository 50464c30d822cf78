#pragma once
// Descriptor pairs for IO scheduler tests: no network needed.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <string>
#include <utility>

namespace csp_test {

// Owns two connected non-blocking descriptors; closes whichever are still open.
class fd_pair {
public:
    enum class kind { socketpair, pipe };

    explicit fd_pair(kind k = kind::socketpair) {
        const int rc = k == kind::socketpair
                           ? ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds_)
                           : ::pipe2(fds_, O_NONBLOCK | O_CLOEXEC);
        if (rc != 0) throw std::runtime_error("fd_pair: " + std::to_string(errno));
    }
    ~fd_pair() {
        close_a();
        close_b();
    }
    fd_pair(fd_pair&& o) noexcept : fds_{std::exchange(o.fds_[0], -1), std::exchange(o.fds_[1], -1)} {}
    fd_pair(const fd_pair&) = delete;
    fd_pair& operator=(const fd_pair&) = delete;

    // For a pipe, a() is the read end and b() the write end.
    int a() const noexcept { return fds_[0]; }
    int b() const noexcept { return fds_[1]; }
    void close_a() { close_one(0); }
    void close_b() { close_one(1); }
    // The descriptor was closed by someone else (csp::io::close).
    void forget_a() { fds_[0] = -1; }

private:
    void close_one(int i) {
        if (fds_[i] >= 0) ::close(fds_[i]);
        fds_[i] = -1;
    }
    int fds_[2] = {-1, -1};
};

inline void put_byte(int fd, char c) {
    if (::write(fd, &c, 1) != 1) throw std::runtime_error("put_byte: write failed, errno " + std::to_string(errno));
}

// Reads one byte; -1 if none is there (EAGAIN), -2 at end of file.
inline int get_byte(int fd) {
    char c;
    const ssize_t n = ::read(fd, &c, 1);
    if (n == 1) return static_cast<unsigned char>(c);
    if (n == 0) return -2;
    return -1;
}

}  // namespace csp_test
