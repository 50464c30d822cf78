#pragma once
// A process's own "exceptions being handled", carried across its switches.
//
// The C++ runtime keeps two things per thread: the stack of exceptions whose
// handlers are running (what `throw;` and std::current_exception() see) and
// the count of exceptions in flight (std::uncaught_exceptions()). Boost.Fiber
// switches stacks without them. So a process that blocks inside a catch
// handler, or in a destructor that unwinding runs, would leave its exception
// on the thread: another process there stacks its own handler on top, and
// the two handlers then end in the wrong order (each ends the other's
// exception); or the process resumes on another worker, whose thread knows
// nothing of it (`throw;` there calls std::terminate).
//
// Invariant: a process switched out at one of the runtime's suspension
// points (waiter.cpp, timer.cpp), or the thread that called run() switching
// out (runtime.cpp), leaves its thread's state empty and keeps its own in
// that suspension's frame, to put back on whichever thread resumes it.
// A process starts with an empty state and never ends inside a handler (the
// entry frame, spawn.hpp, leaves its catch before end_process), so a thread's
// state is always that of the context running on it.
#include <cstring>

namespace csp::detail {

class exception_state {
public:
    // Inline (the sources that suspend include this header, no user's file
    // does): a suspension outside any handler pays a thread-local load and a
    // 16-byte compare.
    exception_state() noexcept {
        void* here = thread_globals;
        if (here == nullptr) here = thread_globals = locate();
        std::memcpy(&saved_, here, sizeof saved_);
        if (saved_.caught != nullptr || saved_.uncaught != 0) clear(here);
    }
    ~exception_state() {
        if (saved_.caught != nullptr || saved_.uncaught != 0) put_back(saved_);
    }
    exception_state(const exception_state&) = delete;
    exception_state& operator=(const exception_state&) = delete;

    // Whether the calling thread holds neither: for tests of the invariant.
    static bool thread_is_clear() noexcept;

private:
    // The Itanium C++ ABI's __cxa_eh_globals, as libstdc++ and libc++abi lay
    // it out outside ARM EHABI (test/csp/exception_state_test.cpp checks it
    // against what `throw;` and std::uncaught_exceptions() see).
    struct globals {
        void* caught;
        unsigned int uncaught;
    };
    // This thread's __cxa_eh_globals, looked up once per thread. Read only
    // before the switch: the ABI's accessor is declared `const` and a
    // thread-local's address may be kept in a register, so after the switch,
    // when the process may run on another thread, put_back looks again,
    // out of line.
    static inline thread_local void* thread_globals = nullptr;
    static void* locate() noexcept;
    static void clear(void* here) noexcept;
    static void put_back(globals g) noexcept;

    globals saved_;
};

}  // namespace csp::detail
