#include "csp/detail/scheduler_policy.hpp"

#include <utility>


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

single_thread_policy::single_thread_policy(runtime_core* rt) : rt_(rt), idle_(1, rt) {
    idle_.attach(*this);
    rt_->add_idle_hook([](void* p) { static_cast<idle_protocol*>(p)->wake_all(); }, &idle_);
}

void single_thread_policy::awakened(context* ctx) noexcept {
    if (fiber::is_dispatcher(ctx)) dispatcher_ = ctx;
    else fiber::push_ready(ctx, ready_);
}

context* single_thread_policy::pick_next() noexcept {
    busy_poll(rt_, busy_poll_);
    if (dispatcher_ && (ready_.empty() || ++picks_since_dispatch_ >= tuning::dispatch_interval)) {
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

void single_thread_policy::suspend_until(time_point const& t) noexcept { idle_.idle(*this, t); }

void single_thread_policy::notify() noexcept { idle_.notify(*this); }

// ---- worker pool --------------------------------------------------------------

void worker_pool::attach(std::size_t idx, worker_policy* w) { workers_[idx].store(w, std::memory_order_release); }

bool worker_pool::has_stealable_work(const worker_policy* except) const {
    for (const auto& slot : workers_) {
        const worker_policy* w = slot.load(std::memory_order_acquire);
        if (w && w != except && w->has_stealable()) return true;
    }
    return false;
}

context* worker_pool::steal_for(const worker_policy* thief) {
    // Start after the thief so that workers do not all raid the same victim.
    std::size_t start = 0;
    for (std::size_t i = 0; i < workers_.size(); ++i)
        if (workers_[i].load(std::memory_order_relaxed) == thief) start = i + 1;
    for (std::size_t k = 0; k < workers_.size(); ++k) {
        worker_policy* victim = workers_[(start + k) % workers_.size()].load(std::memory_order_acquire);
        if (victim == nullptr || victim == thief) continue;
        if (context* ctx = victim->steal()) return ctx;
    }
    return nullptr;
}

// ---- worker -----------------------------------------------------------------

worker_policy::worker_policy(worker_pool* pool, std::size_t idx, runtime_core* rt)
    : pool_(pool), rt_(rt) {
    pool_->attach(idx, this);
    pool_->idle().attach(*this);
    rt_->add_idle_hook([](void* p) { static_cast<idle_protocol*>(p)->wake_all(); }, &pool_->idle());
}

void worker_policy::awakened(context* ctx) noexcept {
    if (!fiber::is_pinned(ctx)) fiber::detach_from_its_thread(ctx);
    {
        std::lock_guard lk(mutex_);
        ready_.push_back(ctx);
    }
    pool_->idle().work_added();
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

void worker_policy::suspend_until(time_point const& t) noexcept { pool_->idle().idle(*this, t); }

void worker_policy::notify() noexcept { pool_->idle().notify(*this); }

}  // namespace csp::detail
