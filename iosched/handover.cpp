#include "iosched/handover.hpp"

#include <algorithm>
#include <mutex>
#include <thread>

#include "csp/deadline_after.hpp"
#include "csp/error.hpp"

namespace csp::io::detail {

// How often disable() spins on a poll that is being woken before it yields
// its thread: a wake through the self-pipe ends a poll within a few
// microseconds, about as long as 64 pauses.
constexpr int disable_spins_before_yield = 64;

handover::handover(backend& b, const registration_table& table, clock::duration spin)
    : backend_(b), table_(table), spin_(spin) {
    results_.reserve(64);
}

void handover::wake() noexcept {
    if (backend_.wake()) pipe_wakes_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<fd_event>& handover::results() {
    if (!failure_.empty()) throw csp::error(failure_);
    return results_;
}

bool handover::poll_until(clock::time_point until) noexcept {
    {
        std::lock_guard lk(lock_);
        if (parked_ == nullptr || polling_ || results_ready_) return false;
        polling_ = true;  // invariant 1
    }
    polls_.fetch_add(1, std::memory_order_relaxed);
    bool failed = false;
    try {
        if (until <= clock::now()) {
            // A poll that cannot block (a busy worker's) needs no wake-up and
            // must not take one meant for the next blocking poll (invariant 5).
            backend_.poll_now(results_);
        } else {
            poll_blocking(until);
        }
    } catch (const std::exception& e) {
        failure_ = e.what();
        failed = true;
    }
    std::lock_guard lk(lock_);
    polling_ = false;
    if (!results_.empty() || failed) {
        results_ready_ = true;  // invariant 3: before the commit
        if (parked_ && parked_->commit()) parked_->owner->wake();
        parked_ = nullptr;
    }
    return true;
}

void handover::poll_blocking(clock::time_point until) {
    // Spin first: a reply that comes back within `spin_` is seen without
    // the sleep and wake-up of a blocking poll (tens of microseconds on a
    // busy machine). A wake-up, a result or the deadline ends the spin.
    bool woken = false;
    if (spin_ > clock::duration::zero() && table_.armed() > 0) {
        const auto stop = std::min(until, csp::deadline_after(spin_));
        while (results_.empty() && !woken && !backend_.wake_pending() && clock::now() < stop) {
            woken = backend_.wait(clock::time_point{}, results_);
            // Between polls, let any other runnable thread of the machine
            // have the core: with more processes than cores (ranks of a
            // job on one host) a spin that does not yield delays the very
            // peer whose reply it waits for. On an idle core this returns
            // at once.
            if (results_.empty() && !woken) std::this_thread::yield();
        }
    }
    if (results_.empty() && !woken) backend_.wait(until, results_);
}

bool handover::events_guard::try_complete() {
    std::lock_guard lk(h_.lock_);
    return std::exchange(h_.results_ready_, false);
}

bool handover::events_guard::enable(csp::wait_node& n) {
    std::lock_guard lk(h_.lock_);
    if (h_.results_ready_) return true;
    h_.parked_ = &n;
    return false;
}

void handover::events_guard::disable(csp::wait_node&) {
    // Woken by a request while a worker may still be in the poll: make it
    // return, and wait, before the backend is touched again (invariant 2).
    h_.lock_.lock();
    h_.parked_ = nullptr;
    for (int spins = 0; h_.polling_; ++spins) {
        h_.lock_.unlock();
        h_.wake();
        if (spins > disable_spins_before_yield) std::this_thread::yield();
        else csp::spin_pause();
        h_.lock_.lock();
    }
    h_.lock_.unlock();
}

void handover::events_guard::complete(csp::wait_node&) {
    std::lock_guard lk(h_.lock_);
    h_.results_ready_ = false;
}

void handover::events_guard::describe(std::string& out) const {
    out.append("readiness of ").append(std::to_string(h_.table_.armed())).append(" file descriptors");
}

}  // namespace csp::io::detail
