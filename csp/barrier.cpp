#include "csp/barrier.hpp"

#include <atomic>
#include <mutex>

#include "csp/detail/source_place.hpp"
#include "csp/error.hpp"
#include "csp/observer.hpp"

namespace csp {

namespace {
std::atomic<std::uint64_t> barriers_made{0};
}

barrier::barrier(std::size_t enrolled, std::string name, std::source_location at)
    : enrolled_(enrolled), name_(std::move(name)), made_at_(at),
      id_(barriers_made.fetch_add(1, std::memory_order_relaxed) + 1) {}

std::string barrier::label() const {
    if (!name_.empty()) return "barrier '" + name_ + "'";
    if (made_at_.line() == 0) return "barrier";
    return "barrier (made at " + detail::source_place(made_at_) + ")";
}

void barrier::enroll(std::size_t n) {
    std::lock_guard lk(lock_);
    enrolled_ += n;
}

void barrier::resign() {
    std::lock_guard lk(lock_);
    if (enrolled_ == 0) throw usage_error("resign from " + label() + " with nobody enrolled");
    --enrolled_;
    if (arrived_ > 0 && arrived_ == enrolled_) complete_phase_locked();
}

void barrier::complete_phase_locked() {
    arrived_ = 0;
    ++phase_;
    waiting_.release_all(wait_node::outcome::done);
}

void barrier::sync() {
    lock_.lock();
    if (enrolled_ == 0) {
        lock_.unlock();
        throw usage_error("sync on " + label() + " with nobody enrolled");
    }
    // The phase this sync belongs to: it cannot complete without it.
    const std::uint64_t phase = phase_;
    if (++arrived_ == enrolled_) {
        complete_phase_locked();
        lock_.unlock();
        detail::notify_sync(*this, phase);
        return;
    }
    waiter w;
    wait_node n{&w, 0, nullptr};
    w.set_site(this);
    waiting_.push_back(n);
    lock_.unlock();
    if (w.wait() == waiter::aborted) {
        {
            std::lock_guard lk(lock_);
            waiting_.erase(n);
            --arrived_;
        }
        w.throw_aborted();
    }
    detail::notify_sync(*this, phase);
}

std::size_t barrier::enrolled() const {
    std::lock_guard lk(lock_);
    return enrolled_;
}

std::uint64_t barrier::phase() const {
    std::lock_guard lk(lock_);
    return phase_;
}

}  // namespace csp
