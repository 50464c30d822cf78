#pragma once
// Guard pages below process stacks, and the message a process that runs into
// one leaves behind.
//
// A guarded stack has an inaccessible page directly below its bottom, so a
// process that recurses past its stack faults there instead of writing over
// the neighbouring stack. The fault handler tells such a fault from any other
// by its address (the guarded regions are registered here), writes which
// process overflowed and its stack size to stderr, and lets the fault go on
// to whatever handled SIGSEGV before (the default: the program dies of it;
// under AddressSanitizer, its report). Every other fault goes straight to
// that previous handler.
//
// Limits, all of them documented to users (README, runtime_options):
//  - each guard splits the stacks' mapping, so a guarded stack costs the
//    process two of its vm.max_map_count mappings. A program gives guards to
//    at most a quarter of that many stacks at once (16,382 with Linux's
//    default), leaving the rest of the budget to malloc and thread stacks;
//    further stacks get none, said once on stderr.
//  - a frame larger than a page can step over the guard without touching
//    it; -fstack-clash-protection makes every frame touch its pages in order.
//  - the handler runs on an alternate signal stack (the faulting stack has
//    no room); the runtime gives each worker thread one while it runs
//    processes, unless the thread has one already.
#include <cstddef>

namespace csp::detail::stack_guard {

// Smaller stacks share pages (stack_pool.hpp): a page of guard apiece would
// cost them more than their stacks.
inline constexpr std::size_t min_guarded_stack = 16 * 1024;

std::size_t page_size() noexcept;

// Makes `page` (page-aligned, the lowest of a stride) a guard, if the
// program's budget has room (see above) and the system agrees; false, and
// the first time a line on stderr saying why, if not.
bool protect(void* page) noexcept;
// `n` guarded stacks went away (their mapping is gone).
void release(std::size_t n) noexcept;
// Guarded stacks the program holds now (pools on the shelf included).
std::size_t in_use() noexcept;
// Whether the program said on stderr that a stack got no guard (it says so
// once).
bool said_no_guard() noexcept;

// A mapping of guarded stacks: `stride` bytes each, the first page of each
// stride its guard. Registering the first also installs the fault handler.
// At most 4,096 regions are registered at once; a fault in one beyond them
// is reported as the plain fault it is.
void add_region(const void* base, std::size_t length, std::size_t stride) noexcept;
void remove_region(const void* base) noexcept;

// An alternate signal stack for the calling thread while this lives, unless
// the thread already has one.
class signal_stack {
public:
    signal_stack() noexcept;
    ~signal_stack();
    signal_stack(const signal_stack&) = delete;
    signal_stack& operator=(const signal_stack&) = delete;

private:
    void* mine_ = nullptr;  // the stack this object installed, or nullptr
};

}  // namespace csp::detail::stack_guard
