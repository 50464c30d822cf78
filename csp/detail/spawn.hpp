#pragma once
// Starting processes and waiting for them (the machinery under par/run).
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include <boost/fiber/fiber.hpp>

#include "csp/error.hpp"
#include "csp/observer.hpp"
#include "csp/waiter.hpp"
#include "csp/detail/process_record.hpp"
#include "csp/detail/runtime_core.hpp"
#include "csp/spinlock.hpp"

namespace csp {

// A callable with a name, shown in deadlock reports and traces.
template <class F>
struct named_process {
    std::string name;
    F body;
};

template <class F>
named_process<std::decay_t<F>> proc(std::string name, F&& body) {
    return {std::move(name), std::forward<F>(body)};
}

namespace detail {

template <class F> struct process_traits {
    using body = F;
    static std::string name(const F&) { return {}; }
    template <class G> static G& callable(G& f) { return f; }
};
template <class F> struct process_traits<named_process<F>> {
    using body = F;
    static std::string name(const named_process<F>& p) { return p.name; }
    template <class P> static auto& callable(P& p) { return p.body; }
};

template <class F>
using process_result_t = std::invoke_result_t<typename process_traits<std::decay_t<F>>::body&>;

// Where a child's result lands: std::optional<R>, or nothing for void.
template <class R> struct result_slot { std::optional<R> value; };
template <> struct result_slot<void> {};

// The parent's side of a par: lives on the parent's stack.
//
// Protocol: each child, as its very last act, calls child_done() which
// records its error, wakes the parent if it was the last, and leaves the
// runtime's live count, all under `lock`. The parent takes the
// lock once more after waking, so it never destroys this object while a
// child is still inside child_done().
class join_state final : public wait_site {
public:
    explicit join_state(std::size_t n) : remaining_(n) {}

    void child_done(std::exception_ptr e, runtime_core* rt) noexcept {
        std::lock_guard lk(lock_);
        if (e && !error_) error_ = std::move(e);
        if (--remaining_ == 0 && parent_ && parent_->commit(0)) parent_->wake();
        rt->process_exited();
    }

    // Blocks the parent until every child has called child_done().
    void wait() {
        lock_.lock();
        if (remaining_ == 0) {
            lock_.unlock();
            return;
        }
        waiter w;
        w.abortable = false;  // it ends when the children end
        w.set_site(this);
        parent_ = &w;
        lock_.unlock();
        w.wait();
        std::lock_guard lk(lock_);  // see the protocol above
        parent_ = nullptr;
    }

    void rethrow_if_failed() const {
        if (error_) std::rethrow_exception(error_);
    }

    // Every child has called child_done(), so nothing touches this any more
    // once the caller holds the lock (the last child_done released it).
    bool finished() {
        std::lock_guard lk(lock_);
        return remaining_ == 0;
    }

    void describe(std::string& out) const override {
        out.append("waiting for ")
            .append(std::to_string(remaining_))
            .append(remaining_ == 1 ? " child process" : " child processes")
            .append(" to finish");
    }

private:

    spinlock lock_;
    std::size_t remaining_;
    waiter* parent_ = nullptr;
    std::exception_ptr error_;
};

// Start `f` as a new process of runtime `rt`. It counts as live from here
// (runtime_core::process_spawned), so the runtime never looks deadlocked
// while the child has yet to start. The callable is decay-copied into the process
// (like std::thread) and destroyed there before the child reports back.
// A daemon (process_group.hpp) is marked before it registers, so the
// deadlock detector never counts it as a program process.
//
// The child's priority is `prio`, or its parent's when negative (the root's:
// normal). Until its record exists, the ready queue learns it from
// spawning_priority (process_record.hpp).
template <class F, class R>
void spawn(runtime_core* rt, const process_record* parent, std::size_t index, F&& f,
           result_slot<R>* result, join_state* join, bool daemon = false, int prio = -1,
           std::source_location made_at = {}) {
    using traits = process_traits<std::decay_t<F>>;
    std::string name = traits::name(f);
    if (prio < 0) prio = parent ? parent->priority.load(std::memory_order_relaxed) : priority_normal;
    rt->process_spawned();
    const copy_context entering(ends_entering_process);  // for the decay-copy of f
    auto body = [rt, parent, index, result, join, daemon, prio, made_at, name = std::move(name),
                 fn = std::decay_t<F>(std::forward<F>(f))]() mutable noexcept {
        std::exception_ptr err;
        {
            alignas(process_record) unsigned char storage[sizeof(process_record)];
            auto* rec = new (storage) process_record(rt, parent, index, std::move(name));
            rec->stack_top = __builtin_frame_address(0);
            rec->daemon = daemon;
            rec->made_at = made_at;
            rec->priority.store(static_cast<std::int8_t>(prio), std::memory_order_relaxed);
            boost::fibers::context* ctx = boost::fibers::context::active();
            ctx->set_properties(rec);
            rt->process_started(rec);
            notify(event::kind::process_begin);
            try {
                auto local = std::move(fn);
                if constexpr (std::is_void_v<R>) traits::callable(local)();
                else result->value.emplace(traits::callable(local)());
            } catch (...) {
                err = std::current_exception();
            }
            notify(event::kind::process_end);
            rt->process_stopped(rec);
            ctx->set_properties(nullptr);  // destroys *rec in place
        }
        join->child_done(std::move(err), rt);
    };
    const int outer = std::exchange(spawning_priority, prio);
    boost::fibers::fiber(boost::fibers::launch::post, std::allocator_arg, rt->stacks(),
                         std::move(body))
        .detach();
    spawning_priority = outer;
}

}  // namespace detail
}  // namespace csp
