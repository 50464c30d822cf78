#include "iosched/registration_table.hpp"

#include <algorithm>

namespace csp::io::detail {

void registration_table::watch(int fd, std::uint64_t id, interest in, bool oneshot, csp::writer<readiness> reply) {
    if (fd < 0) {
        registration r{id, in, oneshot, false, std::move(reply)};
        deliver(fd, r, readiness::status::ready, POLLNVAL);
        return;
    }
    auto [it, added] = fds_.try_emplace(fd);
    if (added) fds_count_.fetch_add(1, std::memory_order_relaxed);
    it->second.push_back({id, in, oneshot, true, std::move(reply)});
    armed_.fetch_add(1, std::memory_order_relaxed);
    update_interest(fd, it->second);
}

registration_table::registration* registration_table::find(int fd, std::uint64_t id) {
    auto it = fds_.find(fd);
    if (it == fds_.end()) return nullptr;
    auto reg = std::find_if(it->second.begin(), it->second.end(), [&](const registration& g) { return g.id == id; });
    return reg == it->second.end() ? nullptr : &*reg;
}

void registration_table::rearm(int fd, std::uint64_t id) {
    registration* reg = find(fd, id);
    if (!reg) return;
    if (!reg->armed) armed_.fetch_add(1, std::memory_order_relaxed);
    reg->armed = true;
    update_interest(fd, fds_.at(fd));
}

void registration_table::cancel(int fd, std::uint64_t id) {
    registration* reg = find(fd, id);
    if (!reg) return;
    if (reg->armed) armed_.fetch_sub(1, std::memory_order_relaxed);
    registrations& regs = fds_.at(fd);
    regs.erase(regs.begin() + (reg - regs.data()));
    update_interest(fd, regs);
}

void registration_table::close(int fd) {
    auto it = fds_.find(fd);
    if (it == fds_.end()) return;
    for (registration& reg : it->second) deliver(fd, reg, readiness::status::closed, 0);
    forget(fd);
}

void registration_table::dispatch(const std::vector<fd_event>& events) {
    for (const fd_event& ev : events) {
        auto it = fds_.find(ev.fd);
        if (it == fds_.end()) continue;  // closed or cancelled since the poll
        for (registration& reg : it->second) {
            if (!reg.armed) continue;
            const short relevant = relevant_events(ev.revents, reg.in);
            if (relevant) deliver(ev.fd, reg, readiness::status::ready, relevant);
        }
        update_interest(ev.fd, it->second);
    }
}

void registration_table::stop_all() {
    for (auto& [fd, regs] : fds_)
        for (registration& reg : regs) deliver(fd, reg, readiness::status::stopped, 0);
    fds_.clear();
    fds_count_.store(0, std::memory_order_relaxed);
    armed_.store(0, std::memory_order_relaxed);
}

void registration_table::deliver(int fd, registration& reg, readiness::status st, short revents) {
    if (reg.armed) armed_.fetch_sub(1, std::memory_order_relaxed);
    reg.armed = false;
    delivered_.fetch_add(1, std::memory_order_relaxed);
    try {
        reg.reply.write(readiness{fd, revents, st, 0});  // one-slot overwriting buffer: never waits
    } catch (const csp::error&) {
        // The reply channel was poisoned by its owner: nobody is listening.
    }
}

// Drops one-shot registrations that have delivered (invariant 3), then tells
// the backend what the remaining armed ones want (invariant 1).
void registration_table::update_interest(int fd, registrations& regs) {
    std::erase_if(regs, [](const registration& g) { return g.oneshot && !g.armed; });
    if (regs.empty()) return forget(fd);
    short events = 0;
    for (const registration& g : regs)
        if (g.armed) events |= static_cast<short>(g.in);
    backend_.set_interest(fd, events);
}

void registration_table::forget(int fd) {
    backend_.forget(fd);
    fds_.erase(fd);
    fds_count_.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace csp::io::detail
