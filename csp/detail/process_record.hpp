#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <source_location>
#include <string>

#include "csp/priority.hpp"

namespace csp {
class waiter;
class wait_note;
}

namespace csp::detail {

class runtime_core;
class worker_policy;

// What the runtime knows about one running process. It is attached to the
// process's fiber through Boost.Fiber "properties" (its `hook`, made and read
// only by the core's sources: fiber_internals.hpp), so any code running on the
// fiber finds it without a lookup table, and no public header needs
// Boost.Fiber's.
//
// Storage: the record lives in the process's own entry frame (see spawn.hpp),
// not on the heap; so does its hook, inside it.
class process_record final {
public:
    // Made and destroyed only by the process's entry frame (spawn.cpp), which
    // attaches and detaches the hook.
    process_record(runtime_core* rt, const process_record* parent, std::size_t index, std::string name);
    ~process_record();
    process_record(const process_record&) = delete;
    process_record& operator=(const process_record&) = delete;

    runtime_core* runtime() const noexcept { return rt_; }

    // The user's name, or a path in the par tree ("main.2.0") when none was given.
    std::string label() const {
        if (!name_.empty()) return name_;
        if (parent_ == nullptr) return "main";
        return parent_->label() + "." + std::to_string(index_);
    }

    void set_name(std::string name) { name_ = std::move(name); }
    // The user's name, empty if none was given.
    const std::string& given_name() const noexcept { return name_; }

    // The process whose par started this one (nullptr for a root), and its
    // branch index there.
    const process_record* parent() const noexcept { return parent_; }
    std::size_t index() const noexcept { return index_; }

    // The untimed waiter this process is blocked in, or nullptr. Written by
    // the process itself around its suspension; read by the deadlock detector
    // while no fiber runs (runtime_core.hpp).
    std::atomic<waiter*> blocked_on{nullptr};
    // Untimed waits this process entered, ever (quiescence.hpp: a sample's
    // activity). Written only by the process itself, so a load and a store,
    // not a read-modify-write; read while no fiber runs.
    std::atomic<std::uint64_t> waits{0};
    // What the process's current wait is for, said by the library call it
    // is blocked in (wait_note.hpp); written by the process itself, read
    // while no fiber runs.
    const wait_note* note = nullptr;

    // A daemon (process_group.hpp), fixed before the process registers.
    bool daemon = false;

    // Where the program started it: the call of run(), par_for() or a
    // process group's spawn(); line 0 for par()'s branches, whose place in
    // the par tree names them.
    std::source_location made_at;

    // The process's priority (priority.hpp). Written only by the process
    // itself; read by whichever thread queues it.
    std::atomic<std::int8_t> priority{static_cast<std::int8_t>(priority_normal)};

    // Hand-off of a parked process to the waker's worker (multi-thread
    // runtimes only; scheduler_policy.hpp). The process sets `parked` under
    // its hook's park lock and suspends with the lock held; Boost releases it
    // only once the process's context is saved. A worker that takes the
    // process from a queue with `handed_off` set runs it only after it took
    // the lock and saw `parked`, so a process committed before it finished
    // suspending is never resumed twice or on two threads at once.
    bool parked = false;      // under the hook's park lock
    // Set by the waker; published with the process (a queue's lock or the
    // run-next exchange) and cleared by the worker that claims it.
    bool handed_off = false;
    // Where the last hand-off came from and went (scheduler_policy.cpp,
    // hand_off): the waker's worker (null for a waker outside the workers)
    // and the worker that claimed the process. If they differ, the process
    // ran beside its waker, not after it, and its next hand-off returns it
    // to the worker it ran on if that one is idle. Written by the waker and
    // the claimer while the process does not run, published as `handed_off`
    // is.
    worker_policy* woken_on = nullptr;
    worker_policy* ran_on = nullptr;

    // Highest address of this process's own frames (sanitizer support).
    void* stack_top = nullptr;

    // Registry links, guarded by runtime_core's registry mutex.
    process_record* prev = nullptr;
    process_record* next = nullptr;

    // Room for the hook (fiber_internals.hpp: a Boost fiber_properties that
    // points back here, and the park lock); checked there against its size.
    static constexpr std::size_t hook_size = 5 * sizeof(void*);
    alignas(void*) unsigned char hook[hook_size];

private:
    runtime_core* rt_;
    const process_record* parent_;
    std::size_t index_;
    std::string name_;
};

// The priority a fiber being spawned on this thread gets in the ready queue
// until its record exists (spawn.hpp sets it around the fiber's creation).
inline thread_local int spawning_priority = priority_normal;

// What copying a channel end means on this thread right now (channel.hpp).
// spawn.hpp raises `ends_entering_process` while it moves or copies a callable
// into a new process: an end made outside any runtime stops counting as
// reachable from outside once the runtime has taken it. par_for raises
// `ends_for_new_branch` while it copies its body for one branch: each end
// copied then is a holder of its own, so one branch's retire is not every
// branch's.
inline thread_local int ends_entering_process = 0;
inline thread_local int ends_for_new_branch = 0;

// Raises one of the counters above for its lifetime.
class copy_context {
public:
    explicit copy_context(int& counter) noexcept : counter_(counter) { ++counter_; }
    ~copy_context() { --counter_; }
    copy_context(const copy_context&) = delete;
    copy_context& operator=(const copy_context&) = delete;

private:
    int& counter_;
};

// The record of the calling fiber, or nullptr when the caller is not a process
// of a csp runtime (a plain thread, or a Boost fiber started by other code).
process_record* current_process() noexcept;  // spawn.cpp

}  // namespace csp::detail
