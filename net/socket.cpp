#include "net/socket.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "csp/alt.hpp"
#include "csp/process.hpp"
#include "iosched/wait.hpp"
#include "net/errors.hpp"

namespace csp::net {

namespace asio = boost::asio;

std::string error_text(int e) { return std::strerror(e); }

// Closed by the IO scheduler (which tells its waiters), or here when there
// is none. Once the scheduler has taken the close request it closes the
// number, whatever it answers: closing it again here could close another
// connection that has the number by then. Only a scheduler that stopped
// before the request left it open.
void unique_fd::reset() noexcept {
    if (fd_ < 0) return;
    const int fd = std::exchange(fd_, -1);
    if (csp::this_process::inside_runtime()) {
        try {
            csp::io::close(fd);
            return;
        } catch (const csp::io::io_error& e) {
            if (e.cond() != csp::io::io_error::condition::stopped) return;
        } catch (...) {
            return;
        }
    }
    ::close(fd);
}

namespace {

void tune(int fd) {
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Best effort (listen_on, connect_to): a refusal leaves the system's.
void start_with(int fd, const std::string& congestion) {
    if (congestion.empty()) return;
    try {
        set_congestion_control(fd, congestion);
    } catch (const net_error&) {
    }
}

asio::ip::tcp::endpoint resolve(const endpoint& e) {
    boost::system::error_code ec;
    const auto addr = asio::ip::make_address(e.host, ec);
    if (!ec) return {addr, e.port};
    asio::io_context ctx;
    asio::ip::tcp::resolver r(ctx);
    auto results = r.resolve(e.host, std::to_string(e.port), ec);
    if (ec || results.empty()) throw net_error("cannot resolve host '" + e.host + "': " + ec.message());
    return *results.begin();
}

// Waits for fd in direction `in` until `deadline`; false if it passed.
bool wait_until(int fd, csp::io::interest in, clock::time_point deadline, give_up stop = nullptr) {
    if (stop) {
        bool ignored;
        try {
            return csp::select(csp::io::fd_guard(fd, in), csp::input(*stop, ignored), csp::deadline(deadline)) == 0;
        } catch (const csp::poisoned_error&) {
            throw gave_up("gave up: the node closed before the connection was set up");
        }
    }
    if (deadline == clock::time_point::max()) {
        csp::io::wait_for(csp::io::this_scheduler(), fd, in);
        return true;
    }
    return csp::select(csp::io::fd_guard(fd, in), csp::deadline(deadline)) == 0;
}

}  // namespace

unique_fd listen_on(const endpoint& at, endpoint& bound, int backlog, const std::string& congestion) {
    const auto ep = resolve(at);
    unique_fd fd(::socket(ep.protocol().family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) throw net_error("socket() for a listener on " + at.str() + ": " + error_text(errno));
    const int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    start_with(fd.get(), congestion);
    if (::bind(fd.get(), ep.data(), static_cast<socklen_t>(ep.size())) != 0)
        throw net_error("cannot bind a listener to " + at.str() + ": " + error_text(errno));
    if (::listen(fd.get(), backlog) != 0) throw net_error("cannot listen on " + at.str() + ": " + error_text(errno));
    asio::ip::tcp::endpoint actual;
    socklen_t len = static_cast<socklen_t>(actual.capacity());
    ::getsockname(fd.get(), actual.data(), &len);
    actual.resize(len);
    bound.host = actual.address().to_string();
    bound.port = actual.port();
    return fd;
}

unique_fd accept_from(int listener) {
    for (;;) {
        const int fd = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            tune(fd);
            return unique_fd(fd);
        }
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return {};
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
            throw out_of_descriptors("accept on listener fd " + std::to_string(listener) + ": " + error_text(errno));
        throw net_error("accept on listener fd " + std::to_string(listener) + ": " + error_text(errno));
    }
}

unique_fd connect_to(const endpoint& to, clock::time_point deadline, give_up stop, const std::string& congestion) {
    const auto ep = resolve(to);
    unique_fd fd(::socket(ep.protocol().family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) throw net_error("socket() to connect to " + to.str() + ": " + error_text(errno));
    tune(fd.get());
    start_with(fd.get(), congestion);
    int rc;
    do rc = ::connect(fd.get(), ep.data(), static_cast<socklen_t>(ep.size()));
    while (rc != 0 && errno == EINTR);
    if (rc != 0 && errno != EINPROGRESS) throw net_error("cannot connect to " + to.str() + ": " + error_text(errno));
    if (rc != 0) {
        // A refused connect shows as POLLERR; the socket's pending error says
        // why, and whoever reads it first clears it: the watch that reported
        // POLLERR keeps it in the io_error.
        int err = 0;
        try {
            if (!wait_until(fd.get(), csp::io::interest::write, deadline, stop))
                throw net_error("cannot connect to " + to.str() + ": timed out");
        } catch (const csp::io::io_error& e) {
            err = e.system_error();
            if (err == 0 && e.cond() != csp::io::io_error::condition::error)
                throw net_error("cannot connect to " + to.str() + ": " + e.what());
        }
        if (err == 0) {
            socklen_t len = sizeof err;
            ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
        }
        if (err != 0) throw net_error("cannot connect to " + to.str() + ": " + error_text(err));
    }
    return fd;
}

void read_exact(int fd, void* buf, std::size_t n, clock::time_point deadline, const std::string& what,
                give_up stop) {
    auto* p = static_cast<char*>(buf);
    std::size_t got = 0;
    while (got < n) {
        const ssize_t r = ::read(fd, p + got, n - got);
        if (r > 0) {
            got += static_cast<std::size_t>(r);
        } else if (r == 0) {
            const std::string why = what + ": connection closed after " + std::to_string(got) + " of " +
                                    std::to_string(n) + " expected bytes";
            if (got == 0) throw closed_before_data(why);
            throw net_error(why);
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (!wait_until(fd, csp::io::interest::read, deadline, stop))
                throw net_error(what + ": timed out waiting for data");
        } else if (errno == ECONNRESET && got == 0) {
            // A hang-up by reset rather than by end of file: still nothing cut.
            throw closed_before_data(what + ": " + error_text(errno) + " before any of " + std::to_string(n) +
                                     " expected bytes");
        } else if (errno != EINTR) {
            throw net_error(what + ": " + error_text(errno));
        }
    }
}

void write_all(int fd, const void* buf, std::size_t n, clock::time_point deadline, const std::string& what,
               give_up stop) {
    const auto* p = static_cast<const char*>(buf);
    std::size_t done = 0;
    while (done < n) {
        const ssize_t r = ::send(fd, p + done, n - done, MSG_NOSIGNAL);
        if (r >= 0) {
            done += static_cast<std::size_t>(r);
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (!wait_until(fd, csp::io::interest::write, deadline, stop))
                throw net_error(what + ": timed out waiting to write");
        } else if ((errno == EPIPE || errno == ECONNRESET) && done == 0) {
            // The peer hung up before this write began: nothing was cut,
            // as a read that meets the end before its first byte.
            throw closed_before_data(what + ": the peer hung up (" + error_text(errno) + ") before any of " +
                                     std::to_string(n) + " bytes were written");
        } else if (errno != EINTR) {
            throw net_error(what + ": " + error_text(errno));
        }
    }
}

bool host_local(int fd) {
    sockaddr_storage ours{}, theirs{};
    socklen_t ours_len = sizeof ours, theirs_len = sizeof theirs;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ours), &ours_len) != 0 ||
        ::getpeername(fd, reinterpret_cast<sockaddr*>(&theirs), &theirs_len) != 0)
        return false;
    if (ours.ss_family != theirs.ss_family) return false;
    if (theirs.ss_family == AF_INET) {
        const in_addr a = reinterpret_cast<const sockaddr_in&>(ours).sin_addr;
        const in_addr b = reinterpret_cast<const sockaddr_in&>(theirs).sin_addr;
        return a.s_addr == b.s_addr || (ntohl(b.s_addr) >> 24) == IN_LOOPBACKNET;
    }
    if (theirs.ss_family == AF_INET6) {
        const in6_addr& a = reinterpret_cast<const sockaddr_in6&>(ours).sin6_addr;
        const in6_addr& b = reinterpret_cast<const sockaddr_in6&>(theirs).sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(&b) || std::memcmp(&a, &b, sizeof a) == 0) return true;
        return IN6_IS_ADDR_V4MAPPED(&b) && b.s6_addr[12] == IN_LOOPBACKNET;
    }
    return false;
}

std::string system_congestion_control() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return {};
    char name[16] = {};  // the kernel's TCP_CA_NAME_MAX
    socklen_t len = sizeof name;
    const bool known = ::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) == 0;
    ::close(fd);
    return known ? std::string(name, ::strnlen(name, len)) : std::string();
}

void set_congestion_control(int fd, const std::string& algorithm) {
    if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, algorithm.data(), static_cast<socklen_t>(algorithm.size())) != 0)
        throw net_error("TCP congestion control '" + algorithm + "': " + error_text(errno));
}

}  // namespace csp::net
