#pragma once
// A ready queue ordered by priority: one FIFO per level and a bit per level
// that says whether that FIFO is non-empty, so push, top and pop are O(1).
// Intrusive through Boost's ready hook (no allocation): a fiber is in at most
// one ready queue at a time. Not synchronised: its owner locks if it must.
#include <cstdint>

#include "csp/detail/fiber_internals.hpp"
#include "csp/priority.hpp"

namespace csp::detail {

class ready_queue {
public:
    bool empty() const noexcept { return mask_ == 0; }
    // Bit i set: level i has a ready fiber.
    std::uint32_t levels() const noexcept { return mask_; }
    // The highest level with a ready fiber; only when !empty().
    int top_level() const noexcept { return 31 - __builtin_clz(mask_); }

    void push(fiber::context* ctx, int level) noexcept {
        fiber::push_ready(ctx, levels_[level]);
        mask_ |= 1u << level;
    }

    // The oldest fiber of the highest level; only when !empty().
    fiber::context* pop() noexcept {
        const int level = top_level();
        fiber::context* ctx = &levels_[level].front();
        levels_[level].pop_front();
        after_removal(level);
        return ctx;
    }

    // The oldest fiber, highest level first, that `runnable` accepts, or
    // nullptr. Fibers passed over keep their place.
    template <class Pred>
    fiber::context* pop_first(Pred&& runnable) noexcept {
        for (std::uint32_t m = mask_; m != 0;) {
            const int level = 31 - __builtin_clz(m);
            m &= ~(1u << level);
            auto& q = levels_[level];
            for (auto it = q.begin(); it != q.end(); ++it) {
                if (!runnable(&*it)) continue;
                fiber::context* ctx = &*it;
                q.erase(it);
                after_removal(level);
                return ctx;
            }
        }
        return nullptr;
    }

private:
    void after_removal(int level) noexcept {
        if (levels_[level].empty()) mask_ &= ~(1u << level);
    }

    fiber::ready_queue levels_[priority_levels];
    std::uint32_t mask_ = 0;
};

}  // namespace csp::detail
