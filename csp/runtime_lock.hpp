#pragma once
// A lock for state that only the processes of one runtime touch: it locks
// when that runtime has several worker threads, and costs nothing with one,
// whose processes never run at the same time. What must stay true: nothing
// done under it suspends the process (no wait, no yield), and no plain
// thread touches the state it guards.
#include "csp/process.hpp"

namespace csp {

template <class Mutex>
class runtime_lock {
public:
    explicit runtime_lock(bool real) : real_(real) {}
    // For state of the calling process's runtime: whether it needs a real
    // lock (also true when the caller is not a process).
    static bool needed_here() noexcept { return this_process::runtime_threads() != 1; }

    // Whether it locks at all.
    bool real() const noexcept { return real_; }
    void lock() {
        if (real_) m_.lock();
    }
    bool try_lock() { return !real_ || m_.try_lock(); }
    void unlock() {
        if (real_) m_.unlock();
    }

private:
    const bool real_;
    Mutex m_;
};

}  // namespace csp
