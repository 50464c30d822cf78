#pragma once
// The runtime: runs a root process and everything it starts.
//
//   int answer = csp::run([] { ... return 42; });                 // one thread
//   csp::run(root, {.threads = 2});                               // work stealing
//
// run() returns the root's result or rethrows its exception. If every process
// becomes blocked on channels, barriers or par joins, with no timer pending
// and no external party alive, run() throws deadlock_error naming each blocked
// process and what it waits for (the blocked operations throw it first, so
// the processes unwind normally).
//
// Channels work across worker threads and from plain std::threads. A thread
// outside the runtime that will use the runtime's channels should hold a
// csp::external_party while it may do so; otherwise a process waiting for it
// could be reported as deadlocked.
#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

#include "csp/process.hpp"

namespace csp {

struct runtime_options {
#if defined(__SANITIZE_ADDRESS__)
    static constexpr std::size_t default_stack_size = 256 * 1024;
#else
    static constexpr std::size_t default_stack_size = 64 * 1024;
#endif
    // Worker threads; the thread calling run() is the first of them. At most
    // max_threads: more is taken for a mistake, not for a machine.
    static constexpr std::size_t max_threads = 1024;
    std::size_t threads = 1;
    // Bytes of stack per process (reserved, not committed). Less than 2 KiB
    // is rounded up to it; more than max_stack_size (1 GiB, Go's limit for a
    // goroutine) is refused.
    static constexpr std::size_t max_stack_size = std::size_t{1} << 30;
    std::size_t stack_size = default_stack_size;
    // A stack of 16 KiB or more gets an inaccessible page below it (and is
    // rounded up to whole pages): a process that overflows it stops the
    // program with a message naming the process and the size, before it
    // wrote over anything (detail/stack_guard.hpp). Smaller stacks share
    // pages and have none; an overflow of a stack without a guard is found
    // by a canary when its process ends.
    bool guard_pages = true;
};

namespace detail {

namespace stack_guard {
class signal_stack;
}

// Throws usage_error naming a runtime_options field whose value is wrong.
void check(const runtime_options& o);

// Installs the scheduling policies and worker threads for one run() on the
// calling thread, and takes them down again. If a worker thread cannot be
// started, the ones that were are stopped, and the constructor throws
// std::system_error naming how many it asked for.
class run_scope {
public:
    explicit run_scope(const runtime_options& o);
    ~run_scope();
    run_scope(const run_scope&) = delete;
    run_scope& operator=(const run_scope&) = delete;

    runtime_core* core() noexcept { return core_.get(); }

private:
    struct workers;
    std::shared_ptr<runtime_core> core_;  // external parties may hold it longer
    std::unique_ptr<workers> workers_;
    std::unique_ptr<stack_guard::signal_stack> signal_stack_;  // guarded stacks only
};

}  // namespace detail

template <class F>
auto run(F&& root, runtime_options options = {}, std::source_location at = std::source_location::current()) {
    using R = detail::process_result_t<F>;
    if (detail::current_process() != nullptr)
        throw usage_error("csp::run called from inside a process: runtimes do not nest");
    detail::check(options);
    detail::result_slot<R> result;
    {
        detail::run_scope scope(options);
        detail::join_state join(1, detail::family{scope.core(), nullptr, at});
        detail::spawn(&join, 0, std::forward<F>(root), &result);
        join.wait();
        scope.core()->stop_services();
        join.rethrow_if_failed();
    }
    if constexpr (!std::is_void_v<R>) return std::move(*result.value);
}

// Held by a thread outside the runtime while it may still use the runtime's
// channels. Create it inside a process and move it into the thread.
class external_party {
public:
    external_party()
        : rt_(detail::calling_process("csp::external_party")->runtime()->shared_from_this()) {
        rt_->external_enter();
    }
    external_party(external_party&&) noexcept = default;
    external_party& operator=(external_party&&) = delete;
    ~external_party() {
        if (rt_) rt_->external_leave();
    }

private:
    std::shared_ptr<detail::runtime_core> rt_;
};

}  // namespace csp
