#pragma once
// Connections a server may drop when it runs out of file descriptors: those
// nobody has vouched for yet (a node's connections still in their handshake,
// a nameserver's clients that have not registered), oldest first.
//
// Invariant: an fd is in the set only while its owner has not closed it. The
// owner removes it before closing, and shedding shuts fds down (never closes
// them) under the same lock, so a number that was closed and reused for
// another connection is never touched. The owner sees its connection end and
// closes it itself, which is what frees the descriptor.
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>

namespace csp::net::detail {

class sheddable {
public:
    void add(int fd) {
        std::lock_guard lk(lock_);
        const auto seq = next_++;
        by_age_.emplace(seq, fd);
        age_of_.emplace(fd, seq);
    }
    void remove(int fd) {
        std::lock_guard lk(lock_);
        auto it = age_of_.find(fd);
        if (it == age_of_.end()) return;
        by_age_.erase(it->second);
        age_of_.erase(it);
    }
    // Shuts down the oldest quarter (at least one, if any); returns how many.
    std::size_t shed_oldest() {
        std::lock_guard lk(lock_);
        std::size_t n = by_age_.empty() ? 0 : by_age_.size() / 4 + 1;
        std::size_t done = 0;
        for (auto it = by_age_.begin(); it != by_age_.end() && done < n; ++done) {
            ::shutdown(it->second, SHUT_RDWR);
            age_of_.erase(it->second);
            it = by_age_.erase(it);
        }
        return done;
    }
    // Shuts every one down (a closing node). They stay owned by their owners.
    void shut_all() {
        std::lock_guard lk(lock_);
        for (const auto& [seq, fd] : by_age_) ::shutdown(fd, SHUT_RDWR);
    }
    std::size_t size() const {
        std::lock_guard lk(lock_);
        return by_age_.size();
    }

private:
    mutable std::mutex lock_;
    std::uint64_t next_ = 0;
    std::map<std::uint64_t, int> by_age_;
    std::unordered_map<int, std::uint64_t> age_of_;
};

}  // namespace csp::net::detail
