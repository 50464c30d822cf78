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
//   - fiber_properties with a no-op delete (record_hook below);
//   - detail::spinlock_ttas::lock()'s thread-local random generator and its
//     5 KiB frame (warm_up_thread and lock_shallow below).
#include <chrono>
#include <mutex>
#include <new>

#include <boost/fiber/context.hpp>
#include <boost/fiber/detail/spinlock.hpp>
#include <boost/fiber/detail/spinlock_ttas.hpp>
#include <boost/fiber/properties.hpp>
#include <boost/fiber/scheduler.hpp>
#include <boost/fiber/type.hpp>
#include <boost/version.hpp>

#include "csp/detail/process_record.hpp"
#include "csp/spinlock.hpp"

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

// Takes one of Boost's spinlocks on a process's stack. Boost's own lock()
// keeps the thread-local generator's std::random_device in its frame, 5 KiB
// of it, reserved on entry whether or not it is built; a contended lock()
// then calls out (its back-off draw, sched_yield) from the bottom of that
// frame, writing 5 KiB deeper than the caller. A park lock is contended for
// a few instructions (a worker's try_lock in hand-off step 3), so a plain
// exchange loop does, with no frame at all.
[[nodiscard]] inline boost::fibers::detail::spinlock_lock lock_shallow(boost::fibers::detail::spinlock& l) noexcept {
    while (!l.try_lock()) {
        for (int spins = 0; spins < 64; ++spins) spin_pause();
    }
    return boost::fibers::detail::spinlock_lock(l, std::adopt_lock);
}

// Moving a (not pinned) fiber between threads' schedulers.
inline void detach_from_its_thread(context* ctx) noexcept { ctx->detach(); }
inline void attach_to_this_thread(context* ctx) noexcept { context::active()->attach(ctx); }

// Suspends the calling fiber until `w` is woken or `deadline` passes.
inline void wait_until(context* self, std::chrono::steady_clock::time_point deadline, boost::fibers::waker w) {
    boost::fibers::detail::spinlock splk;
    boost::fibers::detail::spinlock_lock lk = lock_shallow(splk);
    self->wait_until(deadline, lk, std::move(w));
}

// What ties a process record to its fiber: Boost.Fiber "properties" that
// point back to the record, built in the record's `hook` storage. Boost
// deletes properties through `delete`, hence the no-op operator delete: the
// hook is destroyed in place when the entry frame detaches it with
// set_properties(nullptr) (spawn.cpp).
struct record_hook final : boost::fibers::fiber_properties {
    explicit record_hook(process_record* r) noexcept : fiber_properties(nullptr), rec(r) {}
    static void operator delete(void*) noexcept {}

    process_record* const rec;
    // The park lock of the hand-off protocol (process_record::parked).
    boost::fibers::detail::spinlock park_lock;
};
static_assert(sizeof(record_hook) <= process_record::hook_size && alignof(record_hook) <= alignof(void*),
              "process_record::hook_size is too small for this Boost's fiber_properties");

inline record_hook* hook_of(process_record* rec) noexcept {
    return std::launder(reinterpret_cast<record_hook*>(rec->hook));
}

// The record of the process running on `ctx`, or nullptr.
inline process_record* record_of(const context* ctx) noexcept {
    auto* h = static_cast<record_hook*>(ctx->get_properties());
    return h ? h->rec : nullptr;
}

}  // namespace csp::detail::fiber

namespace csp::detail {

// The queue level of a fiber: its process's priority; for a fiber that has
// not started yet, the priority it was spawned with; otherwise normal.
inline int priority_of(const fiber::context* ctx) noexcept {
    if (const process_record* rec = fiber::record_of(ctx)) return rec->priority.load(std::memory_order_relaxed);
    return spawning_priority;
}

}  // namespace csp::detail
