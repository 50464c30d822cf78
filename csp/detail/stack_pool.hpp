#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <boost/context/stack_context.hpp>

namespace csp::detail {

// Fiber stacks carved out of large anonymous mappings and recycled.
//
// Memory is reserved, not committed: a stack costs only the pages its process
// touches (usually one or two), which is what lets a million blocked processes
// fit in a few GiB.
//
// A guarded pool (stacks of 16 KiB and more, unless the runtime was told
// otherwise) rounds each stack up to whole pages and leaves the page below
// it inaccessible (stack_guard.hpp): a process that recurses past its stack
// faults there, and the program stops naming the process and the size,
// before anything else was overwritten. Layout of a region, one stride per
// stack: [guard page][stack, bottom to top] [guard page][stack] ...
//
// Smaller stacks are packed with no gap, sharing pages, and have no guard:
// a process that overflows one writes over its neighbour. For them (and in
// a guarded pool once one of its stacks went without a guard, past the
// program's guard budget) the lowest word of every stack holds a canary,
// checked when the stack comes back: a process that wrote past its bottom
// stops the program with a message naming the stack size, instead of
// leaving the corruption to surface somewhere else. (A guarded stack has
// none: its guard catches more, and sooner, and the canary would cost the
// stack's lowest page in memory.)
//
// A runtime takes its pool from a shelf of pools that earlier runtimes left
// (for_runtime, shelve): a program that runs again and again (a run per
// phase or per step) reuses its stacks, warm, instead of mapping, guarding,
// faulting in and unmapping them every run (a run of 1,000 processes: 6.5 ms
// on new stacks, 1.0 ms from the shelf; csp_bench fresh_stacks,
// reused_stacks). A shelved pool keeps the top 8 KiB of
// each stack in memory, as a pool inside one run does (a process writes
// about 2 KiB deep), and gives the pages below back to the system.
class stack_pool {
public:
    // Guards are given if `guard` is set and the stacks are large enough.
    explicit stack_pool(std::size_t stack_size, bool guard = false);

    // A pool of the shape asked for: one from the shelf if it holds one,
    // else a new one.
    static std::shared_ptr<stack_pool> for_runtime(std::size_t stack_size, bool guard);
    // Puts a runtime's pool on the shelf when the runtime is done with it:
    // only if nothing else holds it, every stack came back and nobody watched
    // its depth, and the shelf has room (at most 4,096 stacks on it, so that
    // shelved pools hold few of the program's mappings, guards and pages:
    // the oldest pools make room for a newer one). Otherwise it goes.
    static void shelve(std::shared_ptr<stack_pool> pool) noexcept;
    // Empties the shelf (for tests that need stacks nobody wrote).
    static void clear_shelf() noexcept;
    ~stack_pool();
    stack_pool(const stack_pool&) = delete;
    stack_pool& operator=(const stack_pool&) = delete;

    boost::context::stack_context allocate();
    // Aborts with a message if the process overflowed the stack (canary).
    void deallocate(boost::context::stack_context& sc) noexcept;

    // For tests and tuning: from now on, each returned stack is scanned for
    // the deepest byte its process wrote and then zeroed, so the next
    // process's depth is its own. Stacks given out before the call must be
    // fresh (zero) for their depth to be right: call it before the run
    // starts processes.
    // The size of every stack (the size asked for, rounded up).
    std::size_t stack_size() const noexcept { return size_; }
    // Whether stacks get a guard page (while the program's budget lasts).
    bool guarded() const noexcept { return guarded_; }
    // How many of its stacks have one (for tests).
    std::size_t guards() {
        std::lock_guard lk(mutex_);
        return guards_;
    }

    void watch_depth() noexcept { watching_.store(true, std::memory_order_relaxed); }
    // The deepest any watched stack was written, in bytes from its top.
    std::size_t deepest() const noexcept { return deepest_.load(std::memory_order_relaxed); }

private:
    std::atomic<bool> watching_{false};
    std::atomic<std::size_t> deepest_{0};

    // Gives back the pages of every stack below its top 8 KiB: false (and
    // nothing done) unless every stack is back and nobody watched.
    bool trim() noexcept;
    std::size_t capacity() const noexcept;  // stacks the regions hold; takes mutex_
    std::size_t slots() const noexcept;     // the same, with mutex_ held

    // From now on every stack given out gets a canary (under mutex_).
    void start_canaries() noexcept;

    // Whether stacks carry a canary: set under mutex_, after every stack has
    // one; read by deallocate without it (a stack read as having one has).
    std::atomic<bool> canaries_;
    mutable std::mutex mutex_;
    bool guarded_;
    std::size_t size_;
    std::size_t stride_;  // size_, and a guard page if guarded_
    std::size_t guards_ = 0;  // stacks given a guard page, under mutex_
    std::size_t out_ = 0;     // stacks given out and not back, under mutex_
    // Returned stacks form a list linked through their own top word, a page
    // the process had touched anyway: recycling costs no extra memory.
    static void** free_link(void* top) noexcept { return static_cast<void**>(top) - 1; }
    static constexpr std::uint64_t canary = 0x5a17ab1e5a17ab1eull;
    std::uint64_t* canary_of(void* top) const noexcept {
        return reinterpret_cast<std::uint64_t*>(static_cast<char*>(top) - size_);
    }
    void* free_ = nullptr;
    // Mappings of `slots` strides each, carved in order: stacks [0, carved)
    // were given out at some time (each with its guard, if guarded).
    struct region {
        char* base;
        std::size_t slots;
        std::size_t carved = 0;
    };
    std::vector<region> regions_;  // the last one is being carved
};

// The StackAllocator Boost.Fiber copies into each fiber. It shares the pool,
// so stacks released after their runtime has gone still have a home.
class stack_allocator {
public:
    explicit stack_allocator(std::shared_ptr<stack_pool> pool) : pool_(std::move(pool)) {}
    boost::context::stack_context allocate() { return pool_->allocate(); }
    void deallocate(boost::context::stack_context& sc) noexcept { pool_->deallocate(sc); }
    std::size_t stack_size() const noexcept { return pool_->stack_size(); }

private:
    std::shared_ptr<stack_pool> pool_;
};

}  // namespace csp::detail
