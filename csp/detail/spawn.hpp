#pragma once
// Starting processes and waiting for them (the machinery under par/run).
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <source_location>
#include <string>
#include <type_traits>
#include <utility>

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
    static std::string* name(F&) { return nullptr; }
    template <class G> static G& callable(G& f) { return f; }
};
template <class F> struct process_traits<named_process<F>> {
    using body = F;
    static std::string* name(named_process<F>& p) { return &p.name; }
    template <class P> static auto& callable(P& p) { return p.body; }
};

template <class F>
using process_result_t = std::invoke_result_t<typename process_traits<std::decay_t<F>>::body&>;

// Where a child's result lands: std::optional<R>, or nothing for void.
template <class R> struct result_slot { std::optional<R> value; };
template <> struct result_slot<void> {};

// What the children of one par (or one run, or one group member) share. It
// lives in their join_state, not in each child's closure, which every
// process carries on its stack (spawn below).
struct family {
    runtime_core* rt;
    const process_record* parent;  // nullptr for a root or a daemon
    std::source_location made_at;  // line 0 for par()'s branches
    bool daemon = false;           // process_group.hpp
};

// The parent's side of a par: lives on the parent's stack.
//
// Protocol: each child, as its very last act, calls child_done() which
// records its error, wakes the parent if it was the last, and leaves the
// runtime's live count, all under `lock`. The parent takes the
// lock once more after waking, so it never destroys this object while a
// child is still inside child_done().
class join_state final : public wait_site {
public:
    join_state(std::size_t n, const family& kin) : kin(kin), n_(n), remaining_(n) {}

    const family kin;

    void child_done(std::exception_ptr e) noexcept {
        std::lock_guard lk(lock_);
        if (e && !error_) error_ = std::move(e);
        if (--remaining_ == 0 && parent_ && parent_->commit(0)) parent_->wake();
        kin.rt->process_exited();
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

    // Spawn's part (the spawning side only): counts the children that have,
    // or are about to get, a fiber. If starting a child fails,
    // abandon_unstarted() takes the children that never got one out of the
    // count, so that wait() returns once the started ones have finished.
    void launching() noexcept { ++launched_; }
    void launch_failed() noexcept { --launched_; }
    void abandon_unstarted() noexcept {
        std::lock_guard lk(lock_);
        remaining_ -= n_ - launched_;
        n_ = launched_;
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

    void describe(std::string& out) const override;  // spawn.cpp

private:

    spinlock lock_;
    std::size_t n_;             // children the parent means to start
    std::size_t launched_ = 0;  // of which have a fiber; written by the spawning side only
    std::size_t remaining_;
    waiter* parent_ = nullptr;
    std::exception_ptr error_;
};

// The two ends of every process's life, the same for every body type. They
// stay out of line so that their frames (locks, the registry, the observer)
// are not part of the body's frame, which every process carries on its
// stack for as long as it runs or blocks (runtime_options::stack_size).
//
// begin_process builds the process record in `storage` (sizeof
// process_record, on the process's own stack; the name, if any, moves
// there) and registers it; `frame` is
// the body's own frame (sanitizer_support.cpp). end_process unregisters and
// destroys the record, then reports to the parent (join_state::child_done)
// as the process's very last act.
[[gnu::noinline]] process_record* begin_process(void* storage, join_state* join, std::size_t index, int prio,
                                                std::string* name, void* frame);
[[gnu::noinline]] void end_process(process_record* rec, join_state* join, std::exception_ptr err) noexcept;

// A process's entry closure with its type erased, so that its fiber is made
// out of line (spawn.cpp) and no public header needs Boost.Fiber's.
struct entry_ops {
    std::size_t size;
    std::size_t align;
    void (*move_to)(void* at, void* from);  // move-constructs the closure at `at`
    void (*run)(void* at) noexcept;         // runs it, then destroys it
    void (*destroy)(void* at) noexcept;     // destroys it unrun
};

template <class B>
struct entry_ops_of {
    static void move_to(void* at, void* from) { ::new (at) B(std::move(*static_cast<B*>(from))); }
    static void run(void* at) noexcept {
        B& b = *static_cast<B*>(at);
        b();
        b.~B();
    }
    static void destroy(void* at) noexcept { static_cast<B*>(at)->~B(); }
    static constexpr entry_ops ops{sizeof(B), alignof(B), &move_to, &run, &destroy};
};

// A child of `join` could not be started (copying its callable threw, or
// no stack was to be had): those already started refer to `join` and to
// the results in the parent's frame, so they are waited for before `error`
// leaves it. Out of line, like the two above, to keep the par's frame small.
[[noreturn, gnu::noinline]] void rethrow_when_started_end(join_state& join, std::exception_ptr error);

// Starts a fiber of `join`'s runtime, at priority `prio`, that runs the
// closure at `body` (of the type `ops` describes), moved to the top of the
// fiber's own stack; counts it as live and as launched (spawn.cpp).
void launch(join_state* join, int prio, const entry_ops& ops, void* body);

// Start `f` as child `index` of `join`'s family. It counts as live from just
// before its fiber is made (runtime_core::process_spawned), so the runtime
// never looks deadlocked while the child has yet to start. If the child
// cannot be started (copying its callable throws, or no stack is to be had)
// the error propagates with nothing of the child left behind: it never
// counted as live nor as launched (join_state::abandon_unstarted). The callable is decay-copied into the
// process (like std::thread) and destroyed there before the child reports
// back. A daemon (process_group.hpp) is marked before it registers, so the
// deadlock detector never counts it as a program process.
//
// The child's priority is `prio`, or its parent's when negative (the root's:
// normal). Until its record exists, the ready queue learns it from
// spawning_priority (process_record.hpp).
//
// Stack budget: the closure lives at the top of the process's stack for as
// long as the process does (launch): it holds only what differs between
// siblings.
template <class F, class R>
void spawn(join_state* join, std::size_t index, F&& f, result_slot<R>* result, int prio = -1) {
    using traits = process_traits<std::decay_t<F>>;
    const family& kin = join->kin;
    if (prio < 0) prio = kin.parent ? kin.parent->priority.load(std::memory_order_relaxed) : priority_normal;
    const copy_context entering(ends_entering_process);  // for the decay-copy and the move of f
    auto body = [join, result, index, prio = static_cast<std::int8_t>(prio),
                 fn = std::decay_t<F>(std::forward<F>(f))]() mutable noexcept {
        std::exception_ptr err;
        alignas(process_record) unsigned char storage[sizeof(process_record)];
        process_record* const rec =
            begin_process(storage, join, index, prio, traits::name(fn), __builtin_frame_address(0));
        try {
            auto local = std::move(fn);  // destroyed before the parent hears of the end
            if constexpr (std::is_void_v<R>) traits::callable(local)();
            else result->value.emplace(traits::callable(local)());
        } catch (...) {
            err = std::current_exception();
        }
        end_process(rec, join, std::move(err));
    };
    launch(join, prio, entry_ops_of<decltype(body)>::ops, &body);
}

}  // namespace detail
}  // namespace csp
