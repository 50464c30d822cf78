#include "csp/waiter.hpp"

#include <new>
#include <type_traits>

#include <boost/assert.hpp>
#include <boost/fiber/algo/algorithm.hpp>
#include <boost/fiber/context.hpp>

#include "csp/detail/exception_state.hpp"
#include "csp/detail/fiber_internals.hpp"
#include "csp/detail/handoff.hpp"
#include "csp/detail/runtime_core.hpp"
#include "csp/detail/scheduler_policy.hpp"
#include "csp/detail/thread_census.hpp"

namespace csp {

namespace {

static_assert(std::is_trivially_copyable_v<boost::fibers::waker> &&
              std::is_trivially_destructible_v<boost::fibers::waker>);

const boost::fibers::waker& waker_in(const unsigned char* storage) noexcept {
    return *std::launder(reinterpret_cast<const boost::fibers::waker*>(storage));
}

}  // namespace

// How the waiter sleeps is fixed here, before anyone can commit it
// (invariant 5).
waiter::waiter(bool timed) noexcept
    : ctx_(boost::fibers::context::active()),
      proc_(detail::fiber::record_of(ctx_)),
      published_(!timed && proc_ != nullptr),
      how_(published_ && proc_->runtime()->workers() != nullptr ? sleep::hand_off : sleep::fiber) {
    static_assert(sizeof(boost::fibers::waker) <= sizeof(waker_) && alignof(boost::fibers::waker) <= alignof(void*));
    if (how_ == sleep::fiber && !published_) ::new (waker_) boost::fibers::waker(ctx_->create_waker());
}

void waiter::wake() noexcept {
    switch (how_) {
        case sleep::hand_off: detail::hand_off(ctx_, proc_); break;
        case sleep::fiber: wake_fiber(); break;
    }
}

int waiter::wait_timed(clock::time_point deadline, int timeout_index) {
    BOOST_ASSERT_MSG(how_ != sleep::hand_off && !published_, "a waiter made untimed cannot wait with a deadline");
    {
        const detail::exception_state own;
        detail::fiber::wait_until(ctx_, deadline, waker_in(waker_));
    }
    if (commit(timeout_index)) return timeout_index;
    return state();  // a partner committed first; its wake was stale or consumed
}

bool waiter::nobody_could_wake() noexcept {
    return detail::thread_census::only_thread() && commit(aborted);
}

void waiter::throw_aborted() const {
    if (proc_ != nullptr) throw deadlock_error(proc_->runtime()->deadlock_report());
    std::string what = "deadlock: the program's only thread is blocked";
    if (site_ != nullptr) site_->describe(what.append(" "));
    what += " outside any csp runtime, and no other thread exists that could wake it";
    throw deadlock_error(what);
}

void waiter::wake_fiber() noexcept {
    detail::runtime_core* rt = proc_ ? proc_->runtime() : nullptr;
    if (rt != nullptr && rt == detail::runtime_of_this_thread && published_) {
        // A one-thread runtime's process woken on its own worker: it
        // cannot be running, so it has suspended (nothing between its
        // registration and its suspension lets another fiber run), and
        // its wait has no timer whose stale wake Boost's epoch would
        // have to tell apart, nor a place in Boost's sleep queue. It goes
        // straight to the policy's run-next slot.
        if (detail::one_thread_policy != nullptr) detail::one_thread_policy->run_next(ctx_);
        else ctx_->get_scheduler()->schedule(ctx_);  // the run is ending: its policy has gone
        return;
    }
    if (rt == nullptr || rt == detail::runtime_of_this_thread) {
        waker_in(waker_).wake();
        return;
    }
    // From outside the process's runtime: keep the runtime's workers up
    // until Boost has finished the wake (runtime_core::outside_wake_begin).
    // A published waiter has no waker (invariant 5): the one made here is
    // the fiber's only live one, since the fiber is (about to be) suspended
    // in this wait and makes none meanwhile.
    rt->outside_wake_begin();
    if (published_) ctx_->create_waker().wake();
    else waker_in(waker_).wake();
    rt->outside_wake_end();
}

void waiter::suspend_published() {
    if (published_) {
        proc_->waits.store(proc_->waits.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        proc_->blocked_on.store(this, std::memory_order_release);
    }
    {
        const detail::exception_state own;
        switch (how_) {
            case sleep::hand_off: detail::park(ctx_, proc_); break;
            case sleep::fiber: ctx_->suspend(); break;
        }
    }
    if (published_) proc_->blocked_on.store(nullptr, std::memory_order_relaxed);
}

}  // namespace csp
