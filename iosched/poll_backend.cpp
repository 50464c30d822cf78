// The poll backend: one pollfd per registered fd, the self-pipe always last.
// An fd with no wanted events stays in the array with its number negated,
// which poll skips entirely (it would otherwise still report POLLHUP).
//
// Why last: poll registers a wait on every fd it passes until it finds one
// ready, and none after. The self-pipe is rarely the ready one, so placing it
// last saves a wait-queue registration on every poll that finds work.
#include <poll.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <unordered_map>

#include "iosched/backend.hpp"

namespace csp::io::detail {
namespace {

class poll_backend final : public backend {
public:
    poll_backend() { fds_.push_back({pipe_.read_fd(), POLLIN, 0}); }

    void set_interest(int fd, short events) override {
        auto [it, added] = index_.try_emplace(fd, fds_.size() - 1);
        if (added) fds_.insert(fds_.end() - 1, pollfd{});  // before the pipe
        pollfd& p = fds_[it->second];
        p.fd = events ? fd : ~fd;
        p.events = events;
    }

    void forget(int fd) override {
        auto it = index_.find(fd);
        if (it == index_.end()) return;
        const std::size_t i = it->second;
        const std::size_t last = fds_.size() - 2;  // the last registered fd
        index_.erase(it);
        if (i != last) {
            fds_[i] = fds_[last];
            const int moved = fds_[i].fd < 0 ? ~fds_[i].fd : fds_[i].fd;
            index_[moved] = i;
        }
        fds_.erase(fds_.begin() + static_cast<std::ptrdiff_t>(last));
    }

    bool wait(clock::time_point until, std::vector<fd_event>& out) override {
        const timespec_until timeout(until);
        int left = poll(fds_.size(), timeout.get());
        bool woken = false;
        if (left > 0 && fds_.back().revents) {
            pipe_.drain();
            woken = true;
            --left;
        }
        collect(left, out);
        return woken;
    }

    void poll_now(std::vector<fd_event>& out) override {
        if (fds_.size() == 1) return;  // nothing but the pipe
        static constexpr timespec zero{};
        collect(poll(fds_.size() - 1, &zero), out);  // the pipe, last, left out
    }

private:
    // ppoll over the first `count` entries; how many reported events.
    int poll(std::size_t count, const timespec* timeout) {
        const int n = ::ppoll(fds_.data(), count, timeout, nullptr);
        if (n >= 0) return n;
        if (errno == EINTR || errno == EAGAIN) return 0;
        throw csp::error(std::string("IO scheduler: ppoll failed: ") + std::strerror(errno));
    }

    // Appends the `left` registered fds that reported events.
    void collect(int left, std::vector<fd_event>& out) const {
        for (std::size_t i = 0; i + 1 < fds_.size() && left > 0; ++i) {
            if (fds_[i].revents == 0) continue;
            out.push_back({fds_[i].fd, fds_[i].revents});
            --left;
        }
    }

    std::vector<pollfd> fds_;
    std::unordered_map<int, std::size_t> index_;  // fd -> position in fds_
};

}  // namespace

std::unique_ptr<backend> make_poll_backend() { return std::make_unique<poll_backend>(); }

}  // namespace csp::io::detail
