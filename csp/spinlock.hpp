#pragma once
// A small lock for event sources: channels, barriers, and the hand-over
// state of parts above the core (the IO scheduler, a task graph's shares).
#include <atomic>
#include <thread>

namespace csp {

// Tell the CPU we are spinning (saves power, frees the sibling hyperthread).
inline void spin_pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// Test-and-test-and-set lock guarding a channel's or barrier's state. Critical
// sections are a few dozen instructions and never suspend a fiber, so spinning
// beats parking; after a short spin the holder is probably descheduled, so yield.
class spinlock {
public:
    // The uncontended lock is one exchange, inlined at every channel
    // operation; the spin is kept out of line.
    void lock() noexcept {
        if (!locked_.exchange(true, std::memory_order_acquire)) [[likely]] return;
        lock_contended();
    }
    bool try_lock() noexcept { return !locked_.exchange(true, std::memory_order_acquire); }
    void unlock() noexcept { locked_.store(false, std::memory_order_release); }

private:
    [[gnu::noinline]] void lock_contended() noexcept {
        for (;;) {
            for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
                if (spins > 64) std::this_thread::yield(); else spin_pause();
            }
            if (!locked_.exchange(true, std::memory_order_acquire)) return;
        }
    }

    std::atomic<bool> locked_{false};
};

}  // namespace csp
