#pragma once
// The IO scheduler's record of who waits for what: for each descriptor, its
// registrations (protocol.hpp), and what the backend is asked to watch.
//
// Invariants (the scheduler process is the table's only user; the counters
// alone are read by other threads, relaxed)
//  1. The backend's interest in an fd is exactly the union of the interests
//     of its armed registrations; an fd without registrations is not in the
//     backend (forget) and not in the table.
//  2. A registration delivers at most once per arming and is disarmed by the
//     delivery (protocol.hpp: its owner confirms with rearm or cancel), so a
//     level-triggered fd its owner has not yet served is not reported again.
//  3. A one-shot registration leaves the table with its delivery.
//  4. Every registration hears how it ended: ready (then confirmed), closed
//     by close(), or stopped by stop_all(). Delivery never waits: reply
//     channels have a one-slot overwriting buffer, and a poisoned one (its
//     owner gave up) is skipped.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "csp/channel.hpp"
#include "iosched/backend.hpp"
#include "iosched/protocol.hpp"

namespace csp::io::detail {

class registration_table {
public:
    explicit registration_table(backend& b) : backend_(b) {}

    // Adds an armed registration. A negative fd is answered POLLNVAL at once
    // (poll would ignore it and the waiter would never hear).
    void watch(int fd, std::uint64_t id, interest in, bool oneshot, csp::writer<readiness> reply);
    // The owner's confirmation after a delivery. An unknown id is a
    // registration already gone (closed, or a one-shot that delivered).
    void rearm(int fd, std::uint64_t id);
    void cancel(int fd, std::uint64_t id);
    // Tells every registration of `fd` it was closed and forgets the fd; the
    // caller closes it afterwards.
    void close(int fd);
    // Delivers one poll's results to the armed registrations they concern:
    // each gets its own interest's events, and errors and hang-ups.
    void dispatch(const std::vector<fd_event>& events);
    // Tells every registration the scheduler stopped; empties the table.
    void stop_all();

    std::size_t fds() const noexcept { return fds_count_.load(std::memory_order_relaxed); }
    std::size_t armed() const noexcept { return armed_.load(std::memory_order_relaxed); }
    std::uint64_t delivered() const noexcept { return delivered_.load(std::memory_order_relaxed); }

private:
    struct registration {
        std::uint64_t id;
        interest in;
        bool oneshot;
        bool armed;
        csp::writer<readiness> reply;
    };
    using registrations = std::vector<registration>;  // of one fd; usually one or two

    registration* find(int fd, std::uint64_t id);
    void deliver(int fd, registration& reg, readiness::status st, short revents);
    void update_interest(int fd, registrations& regs);
    void forget(int fd);

    backend& backend_;
    std::unordered_map<int, registrations> fds_;
    std::atomic<std::size_t> fds_count_{0};
    std::atomic<std::size_t> armed_{0};
    std::atomic<std::uint64_t> delivered_{0};
};

}  // namespace csp::io::detail
