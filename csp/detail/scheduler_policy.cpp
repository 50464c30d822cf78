#include "csp/detail/scheduler_policy.hpp"

#include <algorithm>
#include <mutex>
#include <utility>

#include <boost/fiber/operations.hpp>

#include "csp/detail/handoff.hpp"
#include "csp/detail/turn.hpp"

namespace csp::detail {

using boost::fibers::context;
using time_point = std::chrono::steady_clock::time_point;

namespace {

// The worker running on this thread, if any (set by its constructor on its
// own thread). hand_off() reads it once per call: a fiber may move between
// threads, so nothing may keep its address across a suspension.
thread_local worker_policy* this_thread_worker = nullptr;

// A non-blocking poll of the runtime's idle poller, if it is time for one.
// Costs a counter's increment (and a clock read every busy_poll_clock_every
// calls) when it is not.
void busy_poll(runtime_core* rt, busy_poll_clock& clock) noexcept {
    if (!fiber::is_dispatcher(context::active())) return;
    // The clock is read even with no event source to look at: a look asked
    // for (csp::yield_to_io) is then spent here, not left pending, where it
    // would send every later pick through the dispatcher and keep lone
    // yields from their shortcut.
    idle_poller* p = rt->idle_poller();
    if (clock.due() && p != nullptr) p->poll_until(time_point{});
}

// Handoff.hpp step 3: whether `ctx` may be resumed now, claiming it if so.
// Called by the worker that has just removed it from a queue or slot, or
// found it under a queue's lock.
bool claim(context* ctx) noexcept {
    process_record* rec = fiber::record_of(ctx);
    if (rec == nullptr || !rec->handed_off) return true;
    auto& park_lock = fiber::hook_of(rec)->park_lock;
    if (!park_lock.try_lock()) return false;  // still suspending
    const bool parked = std::exchange(rec->parked, false);
    if (parked) {
        rec->handed_off = false;
        rec->ran_on = this_thread_worker;
    }
    park_lock.unlock();
    return parked;
}

// Starts the calling worker's next turn; true if the last one was given up
// (end_turn), so the dispatcher is due.
bool next_turn() noexcept {
    this_thread_turn.ops = 0;
    this_thread_turn.yielding = false;
    return std::exchange(this_thread_turn.ended, false);
}

// Both policies' lone_yield, once they have looked: the caller goes on at
// once unless `others` (something else ready, a forced poll, a remote wake)
// or this is the tuning::dispatch_interval-th lone yield in a row.
bool go_on_alone(bool others, unsigned& lone_yields) noexcept {
    if (others || ++lone_yields >= tuning::dispatch_interval) {
        lone_yields = 0;
        return false;
    }
    this_thread_turn.ops = 0;  // as if picked again: a new turn
    return true;
}

// Both policies' rule for their run-next slot: whether its process, at
// `level`, goes before a queue whose best level is `queued` (-1: empty)
// after `streak` picks of the slot in a row. Always above the queue's best,
// for a streak among equals (so a ping-pong cannot starve them), never
// below.
bool run_next_first(int level, int queued, unsigned streak) noexcept {
    return level > queued || (level == queued && streak < tuning::run_next_streak);
}

}  // namespace

// ---- turns (turn.hpp) ------------------------------------------------------------

void end_turn() noexcept {
    this_thread_turn.ops = 0;
    // busy_poll_of_this_thread is set exactly while a policy of ours runs on
    // this thread.
    if (busy_poll_of_this_thread == nullptr || fiber::is_dispatcher(context::active())) return;
    this_thread_turn.ended = true;
    this_thread_turn.yielding = true;
    boost::this_fiber::yield();
}

turn_state* this_thread_turn_state() noexcept { return &this_thread_turn; }

bool lone_yield() noexcept {
    if (worker_policy* w = this_thread_worker) return w->lone_yield();
    return one_thread_policy != nullptr && one_thread_policy->lone_yield();
}

// ---- hand-off (handoff.hpp) ----------------------------------------------------

// A process that ran apart from its waker last time (another worker took it
// from the waker's worker while the waker ran on: a consumer computing with
// one item while its producer computes the next) goes back to the worker it
// ran on if that one is idle, so that a pair which computes side by side
// stays on two cores instead of waiting tuning::run_next_steal_delay in the
// waker's slot for a thief at every item. If that worker takes other work
// first or sleeps on, the waker's worker steals the process once idle, and
// the pair is one worker's again.
void hand_off(context* ctx, process_record* rec) noexcept {
    rec->handed_off = true;
    worker_policy* w = this_thread_worker;
    if (w == nullptr || w->runtime() != rec->runtime()) {
        rec->woken_on = nullptr;
        rec->runtime()->workers()->inject(ctx, priority_of(ctx));
        return;
    }
    const bool ran_apart = rec->woken_on != nullptr && rec->woken_on != rec->ran_on;
    rec->woken_on = w;
    if (ran_apart && rec->ran_on != w && rec->ran_on->idle()) rec->ran_on->take_back(ctx);
    else w->run_next(ctx);
}

// ---- single thread ----------------------------------------------------------

single_thread_policy::single_thread_policy(runtime_core* rt) : rt_(rt), idle_(1, rt) {
    idle_.attach(*this);
    rt_->add_idle_hook([](void* p) { static_cast<idle_protocol*>(p)->wake_all(); }, &idle_);
    one_thread_policy = this;
    busy_poll_of_this_thread = &busy_poll_;
}

single_thread_policy::~single_thread_policy() {
    if (one_thread_policy == this) one_thread_policy = nullptr;
    if (busy_poll_of_this_thread == &busy_poll_) busy_poll_of_this_thread = nullptr;
}

void single_thread_policy::awakened(context* ctx) noexcept {
    if (fiber::is_dispatcher(ctx)) dispatcher_ = ctx;
    else ready_.push(ctx, priority_of(ctx));
}

void single_thread_policy::run_next(context* ctx) noexcept {
    if (next_ != nullptr) ready_.push(next_, next_level_);
    next_ = ctx;
    next_level_ = priority_of(ctx);
}

context* single_thread_policy::pick_next() noexcept {
    busy_poll(rt_, busy_poll_);
    const bool turn_given_up = next_turn();
    if (dispatcher_ && ((next_ == nullptr && ready_.empty()) || busy_poll_.forced() || turn_given_up ||
                        ++picks_since_dispatch_ >= tuning::dispatch_interval)) {
        picks_since_dispatch_ = 0;
        woken_remotely_.store(false, std::memory_order_relaxed);
        return std::exchange(dispatcher_, nullptr);
    }
    if (next_ != nullptr) {
        // Not first: behind its equals, in FIFO order.
        if (run_next_first(next_level_, ready_.empty() ? -1 : ready_.top_level(), next_streak_)) {
            ++next_streak_;
            ++this_thread_turn.picks;
            return std::exchange(next_, nullptr);
        }
        ready_.push(std::exchange(next_, nullptr), next_level_);
    }
    next_streak_ = 0;
    if (ready_.empty()) return nullptr;
    ++this_thread_turn.picks;
    return ready_.pop();
}

bool single_thread_policy::lone_yield() noexcept {
    // The caller is running, so it is a process or the thread's main context,
    // never the dispatcher (which does not yield).
    return go_on_alone(next_ != nullptr || !ready_.empty() || busy_poll_.forced() ||
                           woken_remotely_.load(std::memory_order_relaxed),
                       lone_yields_);
}

bool single_thread_policy::has_ready_fibers() const noexcept {
    return dispatcher_ != nullptr || next_ != nullptr || !ready_.empty();
}

void single_thread_policy::suspend_until(time_point const& t) noexcept { idle_.idle(*this, t); }

void single_thread_policy::notify() noexcept {
    woken_remotely_.store(true, std::memory_order_relaxed);
    idle_.notify(*this);
}

// ---- shared ready queue -------------------------------------------------------

void shared_ready_queue::push(context* ctx, int level) noexcept {
    std::lock_guard lk(lock_);
    queue_.push(ctx, level);
    levels_.store(queue_.levels(), std::memory_order_relaxed);
    pushes_.store(pushes_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

context* shared_ready_queue::take(bool refilled) noexcept {
    if (levels_.load(std::memory_order_relaxed) == 0) return nullptr;
    std::lock_guard lk(lock_);
    context* ctx = queue_.pop_first(claim);
    if (ctx == nullptr) return nullptr;
    levels_.store(queue_.levels(), std::memory_order_relaxed);
    takes_.store(takes_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (queue_.empty() && !refilled)
        drains_.store(drains_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return ctx;
}

// ---- worker pool --------------------------------------------------------------

void worker_pool::attach(std::size_t idx, worker_policy* w) {
    owners_[idx] = w;  // before any other thread can see it
    workers_[idx].store(w, std::memory_order_release);
}

void worker_pool::inject(context* ctx, int level) noexcept {
    injected_.push(ctx, level);
    idle_.work_added(idle_protocol::work::added);
}

namespace {

// Whether `victim`'s queue has held work for tuning::steal_delay, by
// `thief`'s looks at it (queue_look.hpp).
bool has_waited(const worker_policy* thief, const worker_policy* victim, time_point& now) {
    const shared_ready_queue& q = victim->stealable_queue();
    const std::uint64_t takes = q.takes();
    const std::uint64_t drains = q.drains();
    if (now == time_point{}) now = std::chrono::steady_clock::now();
    return thief->looks[victim->index()].held_for(q.pushes(), takes, drains, now, tuning::steal_delay);
}

}  // namespace

int worker_pool::best_stealable(const worker_policy* thief, worker_policy*& victim, time_point& now) const noexcept {
    int best = injected_.top_level();
    victim = nullptr;
    for_each_other(thief, [&](worker_policy* w) {
        if (const int level = w->queued_level(); level > best && has_waited(thief, w, now)) best = level, victim = w;
    });
    return best;
}

int worker_pool::stealable_level(const worker_policy* thief) const noexcept {
    worker_policy* victim;
    time_point now{};
    return best_stealable(thief, victim, now);
}

bool worker_pool::young_work(const worker_policy* thief) const noexcept {
    bool any = false;
    for_each_other(thief, [&](const worker_policy* w) { any = any || w->queued_level() >= 0; });
    return any;
}

context* worker_pool::steal_for(worker_policy* thief) noexcept {
    // Highest priority first: look at every queue, take from the best; a
    // queue whose best was taken meanwhile (or is still suspending) makes us
    // look again, a bounded number of times.
    // The clock is read here, not in has_waited below: a process that ends
    // runs this on its own stack, and two frames more of the clock took an
    // ending reader to 2,016 bytes on four workers, past the 2 KiB budget.
    time_point now{};
    if (young_work(thief)) now = std::chrono::steady_clock::now();
    for (std::size_t attempt = 0; attempt <= workers_.size(); ++attempt) {
        worker_policy* victim;
        if (best_stealable(thief, victim, now) < 0) break;
        if (context* ctx = victim ? victim->steal() : take_injected()) return ctx;
    }
    // A run-next slot, last.
    if (!run_next_stealable(thief)) return nullptr;
    const auto s = std::exchange(thief->sighting, {});
    context* ctx = s.owner->steal_run_next(s.ctx, s.picks);
    if (ctx != nullptr) run_next_steals_.fetch_add(1, std::memory_order_relaxed);
    return ctx;
}

bool worker_pool::run_next_stealable(const worker_policy* thief) const noexcept {
    auto& seen = thief->sighting;
    if (seen.owner == nullptr) {
        sight_run_next(thief);
        return false;
    }
    const worker_policy* owner = seen.owner;
    if (owner->queued_level() >= 0) return false;  // its queue goes first
    if (owner->peek_run_next() != seen.ctx || owner->picks() != seen.picks) {
        sight_run_next(thief);
        return false;
    }
    return std::chrono::steady_clock::now() - seen.when >= tuning::run_next_steal_delay;
}

void worker_pool::sight_run_next(const worker_policy* thief) const noexcept {
    auto& seen = thief->sighting;
    seen = {};
    for_each_other(thief, [&](worker_policy* w) {
        if (seen.owner != nullptr) return;
        if (context* next = w->peek_run_next()) seen = {w, next, w->picks(), std::chrono::steady_clock::now()};
    });
}

bool worker_pool::run_next_held(const worker_policy* self) const noexcept {
    bool held = false;
    for_each_other(self, [&](const worker_policy* w) { held = held || w->peek_run_next() != nullptr; });
    return held;
}

// ---- worker -----------------------------------------------------------------

worker_policy::worker_policy(worker_pool* pool, std::size_t idx, runtime_core* rt)
    : looks(pool->size()), pool_(pool), idx_(idx), rt_(rt), sched_(context::active()->get_scheduler()) {
    this_thread_worker = this;
    busy_poll_of_this_thread = &busy_poll_;
    pool_->attach(idx, this);
    pool_->idle().attach(*this);
    rt_->add_idle_hook([](void* p) { static_cast<idle_protocol*>(p)->wake_all(); }, &pool_->idle());
}

worker_policy::~worker_policy() {
    if (this_thread_worker == this) this_thread_worker = nullptr;
    if (busy_poll_of_this_thread == &busy_poll_) busy_poll_of_this_thread = nullptr;
}

void worker_policy::awakened(context* ctx) noexcept {
    if (fiber::is_dispatcher(ctx)) {
        dispatcher_ = ctx;
    } else if (fiber::is_pinned(ctx)) {
        main_ = ctx;  // a thread has one main context; it never leaves its thread
    } else {
        // A process without a record has not run yet: a new one.
        const bool added = fiber::record_of(ctx) == nullptr;
        fiber::detach_from_its_thread(ctx);
        queue(ctx, added ? idle_protocol::work::added : idle_protocol::work::requeued);
    }
}

void worker_policy::queue(context* ctx, idle_protocol::work w) noexcept {
    queue_.push(ctx, priority_of(ctx));
    pool_->idle().work_added(w);
}

void worker_policy::take_back(context* ctx) noexcept { queue(ctx, idle_protocol::work::added); }

void worker_policy::run_next(context* ctx) noexcept {
    // The level is read now, while the process cannot run: once it sits in
    // the slot a thief may take it, run it to its end and free its record.
    next_level_ = priority_of(ctx);
    if (context* displaced = next_.exchange(ctx, std::memory_order_acq_rel)) queue(displaced);
    else pool_->idle().work_held();
}

context* worker_policy::steal_run_next(context* seen, unsigned picks) noexcept {
    if (picks_.load(std::memory_order_relaxed) != picks) return nullptr;
    if (!next_.compare_exchange_strong(seen, nullptr, std::memory_order_acq_rel)) return nullptr;
    if (claim(seen)) return seen;
    queue(seen);  // still suspending: back where anyone may take it
    return nullptr;
}

// The best of this worker's own work: run-next, the main context and the
// queue, highest priority first (the shared queue when it holds higher).
context* worker_policy::take_local(bool yielding) noexcept {
    const int queued = std::max(queue_.top_level(), pool_->injected_level());
    const int main_level = main_ ? priority_normal : -1;
    if (context* next = next_.load(std::memory_order_relaxed)) {
        const int level = next_level_;
        if (run_next_first(level, queued, next_streak_) && level >= main_level &&
            (next = next_.exchange(nullptr, std::memory_order_acquire)) != nullptr) {
            if (claim(next)) {
                ++next_streak_;
                return next;
            }
            queue(next);  // still suspending: look again later
        }
    }
    next_streak_ = 0;
    if (main_ && main_level >= queued) return std::exchange(main_, nullptr);
    if (queue_.top_level() >= pool_->injected_level()) {
        if (context* ctx = queue_.take(yielding)) return ctx;
    }
    if (context* ctx = pool_->take_injected()) return ctx;
    if (context* ctx = queue_.take(yielding)) return ctx;
    // The run-next process lost to the streak limit or to a queued process
    // that turned out to be still suspending.
    if (context* next = next_.exchange(nullptr, std::memory_order_acquire)) {
        if (claim(next)) return next;
        queue(next);
    }
    if (main_) return std::exchange(main_, nullptr);
    return nullptr;
}

bool worker_policy::lone_yield() noexcept {
    // The caller is running on this worker, so it is a process or the
    // thread's main context, never the dispatcher.
    return go_on_alone(next_.load(std::memory_order_relaxed) != nullptr || main_ != nullptr ||
                           queue_.top_level() >= 0 || pool_->injected_level() >= 0 || busy_poll_.forced() ||
                           woken_remotely_.load(std::memory_order_relaxed),
                       lone_yields_);
}

context* worker_policy::pick_next() noexcept {
    busy_poll(rt_, busy_poll_);
    picks_.store(picks_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    // A yielding main context goes back to main_, not to the queue.
    const bool yielding = this_thread_turn.yielding && !fiber::is_pinned(context::active());
    const bool turn_given_up = next_turn();
    if (dispatcher_ &&
        (busy_poll_.forced() || turn_given_up || ++picks_since_dispatch_ >= tuning::dispatch_interval)) {
        picks_since_dispatch_ = 0;
        woken_remotely_.store(false, std::memory_order_relaxed);
        return std::exchange(dispatcher_, nullptr);
    }
    context* ctx = take_local(yielding);
    if (ctx == nullptr) ctx = pool_->steal_for(this);
    if (ctx == nullptr) {
        picks_since_dispatch_ = 0;
        woken_remotely_.store(false, std::memory_order_relaxed);
        return std::exchange(dispatcher_, nullptr);
    }
    // Through the scheduler, not context::active(): the active fiber may be
    // one that has just detached itself to park.
    if (!fiber::is_pinned(ctx)) sched_->attach_worker_context(ctx);
    ++this_thread_turn.picks;
    return ctx;
}

bool worker_policy::has_ready_fibers() const noexcept {
    return dispatcher_ != nullptr || main_ != nullptr || next_.load(std::memory_order_relaxed) != nullptr ||
           queue_.top_level() >= 0;
}

time_point worker_policy::sleep_limit() noexcept {
    if (!pool_->run_next_held(this) && !pool_->young_work(this)) return time_point::max();
    // Note what is held now, so that the look after the sleep can tell a slot
    // that did not move.
    pool_->sight_run_next(this);
    return std::chrono::steady_clock::now() + tuning::busy_watch;
}

std::uint64_t worker_policy::runs() const noexcept { return this_thread_turn.picks; }

void worker_policy::suspend_until(time_point const& t) noexcept {
    idle_.store(true, std::memory_order_relaxed);
    pool_->idle().idle(*this, t);
    idle_.store(false, std::memory_order_relaxed);
}

void worker_policy::notify() noexcept {
    woken_remotely_.store(true, std::memory_order_relaxed);
    pool_->idle().notify(*this);
}

}  // namespace csp::detail
