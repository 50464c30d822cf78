#include "csp/detail/scheduler_policy.hpp"

#include <utility>

#include "csp/waiter.hpp"
#include "csp/spinlock.hpp"

namespace csp::detail {

using boost::fibers::context;
using time_point = std::chrono::steady_clock::time_point;

namespace {

// A non-blocking poll of the runtime's idle poller, if it is time for one.
// Costs one atomic load when the runtime has no poller.
void busy_poll(runtime_core* rt, busy_poll_clock& clock) noexcept {
    idle_poller* p = rt->idle_poller();
    if (p == nullptr || !fiber::is_dispatcher(context::active())) return;
    if (clock.due()) p->poll_until(time_point{});
}
}  // namespace

// ---- single thread ----------------------------------------------------------

single_thread_policy::single_thread_policy(runtime_core* rt) : rt_(rt) {
    rt_->add_idle_hook([](void* self) { static_cast<single_thread_policy*>(self)->notify(); }, this);
}

void single_thread_policy::awakened(context* ctx) noexcept {
    if (fiber::is_dispatcher(ctx)) dispatcher_ = ctx;
    else fiber::push_ready(ctx, ready_);
}

context* single_thread_policy::pick_next() noexcept {
    busy_poll(rt_, busy_poll_);
    if (dispatcher_ && (ready_.empty() || ++picks_since_dispatch_ >= dispatch_interval)) {
        picks_since_dispatch_ = 0;
        return std::exchange(dispatcher_, nullptr);
    }
    if (ready_.empty()) return nullptr;
    context* ctx = &ready_.front();
    ready_.pop_front();
    return ctx;
}

bool single_thread_policy::has_ready_fibers() const noexcept {
    return dispatcher_ != nullptr || !ready_.empty();
}

void single_thread_policy::suspend_until(time_point const& t) noexcept {
    {
        std::lock_guard lk(mutex_);
        if (notified_) {  // a fiber woken from another thread waits in Boost's remote queue
            notified_ = false;
            return;
        }
    }
    // No fiber of the runtime runs now: the precondition of the deadlock walk.
    if (rt_->check_deadlock()) return;
    if (idle_poller* p = rt_->idle_poller()) {
        {
            std::lock_guard lk(mutex_);
            if (notified_) {
                notified_ = false;
                return;
            }
            polling_ = p;  // from here notify() wakes the poll
        }
        const bool polled = p->poll_until(t);
        std::lock_guard lk(mutex_);
        polling_ = nullptr;
        if (polled) {
            notified_ = false;  // Boost's dispatcher looks at its remote queue next
            return;
        }
    }
    std::unique_lock lk(mutex_);
    if (t == time_point::max()) cv_.wait(lk, [this] { return notified_; });
    else cv_.wait_until(lk, t, [this] { return notified_; });
    notified_ = false;
}

void single_thread_policy::notify() noexcept {
    idle_poller* p;
    {
        std::lock_guard lk(mutex_);
        notified_ = true;
        p = polling_;
    }
    if (p) p->wake();
    cv_.notify_all();
}

// ---- worker pool --------------------------------------------------------------

void worker_pool::attach(std::size_t idx, worker_policy* w) {
    std::lock_guard lk(mutex_);
    workers_[idx] = w;
}

// The polling worker counts among the sleepers: new stealable work wakes it
// (once per poll) as it wakes a worker sleeping on cv_.
void worker_pool::work_added() {
    if (sleepers_.load() == 0) return;
    idle_poller* p = nullptr;
    {
        std::lock_guard lk(mutex_);
        ++epoch_;
        p = poll_to_wake_locked(true);
    }
    cv_.notify_one();
    if (p) p->wake();
}

void worker_pool::notify(worker_policy* w) {
    idle_poller* p = nullptr;
    {
        std::lock_guard lk(mutex_);
        w->notified = true;
        p = poll_to_wake_locked(polling_worker_ == w);
    }
    cv_.notify_all();
    if (p) p->wake();
}

void worker_pool::wake_all() {
    idle_poller* p = nullptr;
    {
        std::lock_guard lk(mutex_);
        ++epoch_;
        p = poll_to_wake_locked(true);
    }
    cv_.notify_all();
    if (p) p->wake();
}

bool worker_pool::has_stealable_work(const worker_policy* except) const {
    for (const worker_policy* w : workers_)
        if (w && w != except && w->has_stealable()) return true;
    return false;
}

context* worker_pool::steal_for(const worker_policy* thief) {
    // Start after the thief so that workers do not all raid the same victim.
    std::size_t start = 0;
    for (std::size_t i = 0; i < workers_.size(); ++i)
        if (workers_[i] == thief) start = i + 1;
    for (std::size_t k = 0; k < workers_.size(); ++k) {
        worker_policy* victim = workers_[(start + k) % workers_.size()];
        if (victim == nullptr || victim == thief) continue;
        if (context* ctx = victim->steal()) return ctx;
    }
    return nullptr;
}

void worker_pool::idle(worker_policy* self, runtime_core* rt, time_point until) {
    const time_point spin_until = std::min(until, std::chrono::steady_clock::now() + spin_for);
    for (unsigned i = 1;; ++i) {
        if (self->notified.load(std::memory_order_relaxed) || has_stealable_work(self)) {
            self->notified = false;
            return;
        }
        if (i % 16 == 0 && std::chrono::steady_clock::now() >= spin_until) break;
        spin_pause();
    }
    std::unique_lock lk(mutex_);
    if (self->notified || self->has_ready_fibers() || has_stealable_work(self)) {
        self->notified = false;
        return;
    }
    const std::uint64_t seen = epoch_;
    sleepers_.fetch_add(1);
    // The last worker to go idle, with nothing pending anywhere, holds the
    // only moment when no fiber runs: the precondition of the deadlock walk.
    // Workers cannot leave idle while we hold the mutex; the aborted waiters
    // are woken after it is released (waking takes it again).
    bool all_idle = static_cast<std::size_t>(sleepers_.load()) == workers_.size();
    for (const worker_policy* w : workers_) all_idle = all_idle && !w->notified;
    std::vector<waiter*> to_wake;
    if (all_idle && rt->find_deadlock(to_wake)) {
        sleepers_.fetch_sub(1);
        lk.unlock();
        for (waiter* w : to_wake) w->wake();
        return;
    }
    // One idle worker waits in the runtime's idle poller rather than on cv_.
    if (idle_poller* p = rt->idle_poller(); p && polling_worker_ == nullptr) {
        polling_worker_ = self;
        poller_ = p;
        poller_woken_ = false;
        lk.unlock();
        const bool polled = p->poll_until(until);
        lk.lock();
        polling_worker_ = nullptr;
        poller_ = nullptr;
        if (polled || epoch_ != seen || self->notified) {
            self->notified = false;
            sleepers_.fetch_sub(1);
            return;
        }
    }
    auto woken = [&] { return epoch_ != seen || self->notified; };
    if (until == time_point::max()) cv_.wait(lk, woken);
    else cv_.wait_until(lk, until, woken);
    self->notified = false;
    sleepers_.fetch_sub(1);
}

// ---- worker -----------------------------------------------------------------

worker_policy::worker_policy(worker_pool* pool, std::size_t idx, runtime_core* rt)
    : pool_(pool), rt_(rt) {
    pool_->attach(idx, this);
    rt_->add_idle_hook([](void* p) { static_cast<worker_pool*>(p)->wake_all(); }, pool_);
}

void worker_policy::awakened(context* ctx) noexcept {
    if (!fiber::is_pinned(ctx)) fiber::detach_from_its_thread(ctx);
    {
        std::lock_guard lk(mutex_);
        ready_.push_back(ctx);
    }
    pool_->work_added();
}

context* worker_policy::pick_next() noexcept {
    busy_poll(rt_, busy_poll_);
    context* ctx = nullptr;
    {
        std::lock_guard lk(mutex_);
        if (!ready_.empty()) {
            ctx = ready_.front();
            ready_.pop_front();
        }
    }
    if (ctx == nullptr) ctx = pool_->steal_for(this);
    if (ctx != nullptr && !fiber::is_pinned(ctx)) fiber::attach_to_this_thread(ctx);
    return ctx;
}

bool worker_policy::has_ready_fibers() const noexcept {
    std::lock_guard lk(mutex_);
    return !ready_.empty();
}

bool worker_policy::has_stealable() const noexcept {
    std::lock_guard lk(mutex_);
    for (const context* ctx : ready_)
        if (!fiber::is_pinned(ctx)) return true;
    return false;
}

context* worker_policy::steal() noexcept {
    std::lock_guard lk(mutex_);
    for (auto it = ready_.rbegin(); it != ready_.rend(); ++it) {
        if (!fiber::is_pinned(*it)) {
            context* ctx = *it;
            ready_.erase(std::next(it).base());
            return ctx;
        }
    }
    return nullptr;
}

void worker_policy::suspend_until(time_point const& t) noexcept { pool_->idle(this, rt_, t); }

void worker_policy::notify() noexcept { pool_->notify(this); }

}  // namespace csp::detail
