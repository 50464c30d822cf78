// Built only with CSP_SANITIZE. AddressSanitizer clears the poison of the
// frames an exception unwinds (__asan_handle_no_return), but only on stacks
// it knows; on a fiber stack it gives up, and the stale poison of unwound
// frames later shows up as false stack-buffer-overflows. Debian's Boost.Fiber
// is built without the fiber-switch annotations that would tell it, so the
// link wraps the three ways to start unwinding (throw, throw;, and
// std::rethrow_exception; see csp/CMakeLists.txt) and clears, on the throwing
// process's stack, what AddressSanitizer would have cleared on a thread's.
#include <exception>

#include <sanitizer/asan_interface.h>

#include "csp/detail/process_record.hpp"

namespace {
[[gnu::always_inline]] inline void unpoison_process_stack(const void* here) {
    const csp::detail::process_record* p = csp::detail::current_process();
    if (p == nullptr || p->stack_top == nullptr) return;
    auto* from = static_cast<const char*>(here);
    ASAN_UNPOISON_MEMORY_REGION(from, static_cast<const char*>(p->stack_top) - from);
}
}  // namespace

extern "C" {
[[noreturn]] void __real___cxa_throw(void* object, void* type, void (*destroy)(void*));
[[noreturn]] void __real___cxa_rethrow();
[[noreturn]] void __real__ZSt17rethrow_exceptionNSt15__exception_ptr13exception_ptrE(std::exception_ptr);

[[noreturn]] void __wrap___cxa_throw(void* object, void* type, void (*destroy)(void*)) {
    unpoison_process_stack(__builtin_frame_address(0));
    __real___cxa_throw(object, type, destroy);
}

[[noreturn]] void __wrap___cxa_rethrow() {
    unpoison_process_stack(__builtin_frame_address(0));
    __real___cxa_rethrow();
}

[[noreturn]] void __wrap__ZSt17rethrow_exceptionNSt15__exception_ptr13exception_ptrE(std::exception_ptr e) {
    unpoison_process_stack(__builtin_frame_address(0));
    __real__ZSt17rethrow_exceptionNSt15__exception_ptr13exception_ptrE(std::move(e));
}
}
