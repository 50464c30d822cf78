// The epoll backend, level-triggered, with lazy masking.
//
// Changing the kernel's interest set costs a system call, and the scheduler
// disarms and re-arms an fd around every readiness it delivers. So the kernel
// set is only ever *widened* eagerly (an armed fd must be seen). When an fd
// is disarmed it stays in the kernel set; only if the kernel reports it while
// nobody wants it is it narrowed (or removed). In a ping-pong the process
// re-arms before the next wait, so the common path makes no epoll_ctl at all.
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <unordered_map>

#include "iosched/backend.hpp"

namespace csp::io::detail {
namespace {

constexpr int pipe_tag = -1;  // epoll_event.data.fd of the self-pipe

class epoll_backend final : public backend {
public:
    epoll_backend() : ep_(::epoll_create1(EPOLL_CLOEXEC)) {
        if (ep_ < 0) fail("epoll_create1");
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = pipe_tag;
        if (::epoll_ctl(ep_, EPOLL_CTL_ADD, pipe_.read_fd(), &ev) != 0) fail("epoll_ctl");
        events_.resize(256);
    }
    ~epoll_backend() override { ::close(ep_); }

    void set_interest(int fd, short events) override {
        entry& e = fds_[fd];
        e.wanted = events;
        if ((events & ~e.in_kernel) == 0) return;  // the kernel already reports enough
        // Widen to what is wanted now plus what the kernel had: narrowing waits
        // until the kernel reports something unwanted.
        control(fd, e, static_cast<short>(events | e.in_kernel));
    }

    void forget(int fd) override {
        auto it = fds_.find(fd);
        if (it == fds_.end()) return;
        if (it->second.present) ::epoll_ctl(ep_, EPOLL_CTL_DEL, fd, nullptr);  // may be closed already
        fds_.erase(it);
    }

    bool wait(clock::time_point until, std::vector<fd_event>& out) override {
        return wait(until, out, true);
    }

    void poll_now(std::vector<fd_event>& out) override { wait(clock::time_point{}, out, false); }

private:
    // A wake-up is drained only if `consume_wake`; otherwise the pipe stays
    // readable (level-triggered) for the next wait.
    bool wait(clock::time_point until, std::vector<fd_event>& out, bool consume_wake) {
        bool woken = false;
        if (!refused_.empty()) {  // answer these now, the way poll would have
            for (const fd_event& e : refused_)
                if (fds_.count(e.fd)) out.push_back(e);
            refused_.clear();
            until = clock::time_point{};
        }
        const timespec_until timeout(until);
        const int n = ::epoll_pwait2(ep_, events_.data(), static_cast<int>(events_.size()), timeout.get(), nullptr);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) return false;
            fail("epoll_pwait2");
        }
        for (int i = 0; i < n; ++i) {
            const epoll_event& ev = events_[static_cast<std::size_t>(i)];
            if (ev.data.fd == pipe_tag) {
                if (consume_wake) {
                    pipe_.drain();
                    woken = true;
                }
                continue;
            }
            auto it = fds_.find(ev.data.fd);
            if (it == fds_.end()) continue;
            entry& e = it->second;
            const short revents = to_poll(ev.events);
            const short relevant = static_cast<short>(revents & (e.wanted | POLLERR | POLLHUP | POLLNVAL));
            if (e.wanted == 0 || relevant == 0) {
                control(ev.data.fd, e, e.wanted);  // reported while unwanted: narrow now
                continue;
            }
            out.push_back({ev.data.fd, relevant});
        }
        return woken;
    }

    struct entry {
        short wanted = 0;
        short in_kernel = 0;
        bool present = false;  // in the kernel's set
    };

    static short to_poll(std::uint32_t ev) {
        short r = 0;
        if (ev & EPOLLIN) r |= POLLIN;
        if (ev & EPOLLOUT) r |= POLLOUT;
        if (ev & EPOLLERR) r |= POLLERR;
        if (ev & EPOLLHUP) r |= POLLHUP;
        return r;
    }

    // Make the kernel's set for `fd` exactly `events` (absent if 0, since
    // epoll reports errors and hang-ups even for an empty mask).
    void control(int fd, entry& e, short events) {
        if (events == 0) {
            if (e.present) ::epoll_ctl(ep_, EPOLL_CTL_DEL, fd, nullptr);
            e.present = false;
            e.in_kernel = 0;
            return;
        }
        epoll_event ev{};
        ev.events = (events & POLLIN ? EPOLLIN : 0u) | (events & POLLOUT ? EPOLLOUT : 0u);
        ev.data.fd = fd;
        if (::epoll_ctl(ep_, e.present ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) != 0) {
            // poll says POLLNVAL for a closed fd, and "always ready" for a
            // regular file (which epoll refuses with EPERM).
            refused_.push_back({fd, errno == EPERM ? events : static_cast<short>(POLLNVAL)});
            e.present = false;
            e.in_kernel = 0;
            return;
        }
        e.present = true;
        e.in_kernel = events;
    }

    [[noreturn]] static void fail(const char* call) {
        throw csp::error(std::string("IO scheduler: ") + call + " failed: " + std::strerror(errno));
    }

    int ep_;
    std::vector<epoll_event> events_;
    std::unordered_map<int, entry> fds_;
    std::vector<fd_event> refused_;  // fds epoll_ctl refused, answered by the next wait
};

}  // namespace

std::unique_ptr<backend> make_epoll_backend() { return std::make_unique<epoll_backend>(); }

}  // namespace csp::io::detail
