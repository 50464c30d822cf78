#pragma once
// Every use of Boost.Fiber below its documented interface, in one place.
//
// Checked against Boost 1.81 (Debian 12's libboost-fiber1.81-dev), the
// minimum the build accepts. On a newer Boost, read these against that
// version's boost/fiber/context.hpp and scheduler.hpp before trusting the
// runtime:
//   - context::is_context(type::pinned_context / dispatcher_context): the
//     policies must never migrate a pinned context or queue the dispatcher;
//   - context::ready_link(scheduler::ready_queue_type&): the intrusive ready
//     queue a single-thread policy uses without allocating;
//   - context::attach / detach: moving a fiber to another thread's
//     scheduler (what boost::fibers::algo::work_stealing does);
//   - context::wait_until(deadline, detail::spinlock_lock&, waker&&) and
//     context::create_waker / boost::fibers::waker: the epoch-checked wake
//     the waiter protocol is built on (csp/waiter.hpp);
//   - fiber_properties with a no-op delete (csp/detail/process_record.hpp);
//   - detail::spinlock_ttas::lock()'s thread-local random generator (below).
#include <chrono>

#include <boost/fiber/context.hpp>
#include <boost/fiber/detail/spinlock.hpp>
#include <boost/fiber/detail/spinlock_ttas.hpp>
#include <boost/fiber/scheduler.hpp>
#include <boost/fiber/type.hpp>
#include <boost/version.hpp>

static_assert(BOOST_VERSION >= 108100, "csp needs Boost.Fiber 1.81 or newer (see fiber_internals.hpp)");

namespace csp::detail::fiber {

using context = boost::fibers::context;
using ready_queue = boost::fibers::scheduler::ready_queue_type;

inline bool is_pinned(const context* ctx) noexcept { return ctx->is_context(boost::fibers::type::pinned_context); }
inline bool is_main(const context* ctx) noexcept { return ctx->is_context(boost::fibers::type::main_context); }
inline bool is_dispatcher(const context* ctx) noexcept {
    return ctx->is_context(boost::fibers::type::dispatcher_context);
}
inline void push_ready(context* ctx, ready_queue& q) noexcept { ctx->ready_link(q); }

// Boost's spinlocks seed a thread-local generator for their back-off from a
// std::random_device, built on the stack of whoever locks one first on the
// thread: about 5 KiB of object and 3 KiB of getrandom() below it. If that
// is a process, its stack must be 10 KiB deep once, for nothing. Each
// thread of a runtime takes one of each kind of lock on its own stack before
// any process runs on it.
inline void warm_up_thread() noexcept {
    boost::fibers::detail::spinlock_ttas ttas;
    ttas.lock();
    ttas.unlock();
    boost::fibers::detail::spinlock used;  // what this build's Boost chose
    used.lock();
    used.unlock();
}

// Moving a (not pinned) fiber between threads' schedulers.
inline void detach_from_its_thread(context* ctx) noexcept { ctx->detach(); }
inline void attach_to_this_thread(context* ctx) noexcept { context::active()->attach(ctx); }

// Suspends the calling fiber until `w` is woken or `deadline` passes.
inline void wait_until(context* self, std::chrono::steady_clock::time_point deadline, boost::fibers::waker w) {
    boost::fibers::detail::spinlock splk;
    boost::fibers::detail::spinlock_lock lk(splk);
    self->wait_until(deadline, lk, std::move(w));
}

}  // namespace csp::detail::fiber
