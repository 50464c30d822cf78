// The poll backend: one pollfd per registered fd, the self-pipe at index 0.
// An fd with no wanted events stays in the array with its number negated,
// which poll skips entirely (it would otherwise still report POLLHUP).
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
        auto [it, added] = index_.try_emplace(fd, fds_.size());
        if (added) fds_.push_back({});
        pollfd& p = fds_[it->second];
        p.fd = events ? fd : ~fd;
        p.events = events;
    }

    void forget(int fd) override {
        auto it = index_.find(fd);
        if (it == index_.end()) return;
        const std::size_t i = it->second;
        index_.erase(it);
        if (i != fds_.size() - 1) {
            fds_[i] = fds_.back();
            const int moved = fds_[i].fd < 0 ? ~fds_[i].fd : fds_[i].fd;
            index_[moved] = i;
        }
        fds_.pop_back();
    }

    void wait(clock::time_point until, std::vector<fd_event>& out) override {
        const timespec_until timeout(until);
        const int n = ::ppoll(fds_.data(), fds_.size(), timeout.get(), nullptr);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) return;
            throw csp::error(std::string("IO scheduler: ppoll failed: ") + std::strerror(errno));
        }
        int left = n;
        if (fds_[0].revents) {
            pipe_.drain();
            --left;
        }
        for (std::size_t i = 1; i < fds_.size() && left > 0; ++i) {
            if (fds_[i].revents == 0) continue;
            out.push_back({fds_[i].fd, fds_[i].revents});
            --left;
        }
    }

private:
    std::vector<pollfd> fds_;
    std::unordered_map<int, std::size_t> index_;  // fd -> position in fds_
};

}  // namespace

std::unique_ptr<backend> make_poll_backend() { return std::make_unique<poll_backend>(); }

}  // namespace csp::io::detail
