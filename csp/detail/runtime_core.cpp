#include "csp/detail/runtime_core.hpp"

#include "csp/waiter.hpp"

namespace csp::detail {

bool runtime_core::check_deadlock() {
    if (active_.load() != 0 || live_.load() == 0 || externals_.load() != 0) return false;
    std::lock_guard lk(registry_mutex_);
    // Re-check under the registry lock: two idle workers may race here, and
    // only the first may abort (the second sees the woken processes active).
    if (active_.load() != 0 || live_.load() == 0 || externals_.load() != 0) return false;

    std::string report = "deadlock: every process is blocked and nothing can wake any of them\n";
    std::size_t listed = 0;
    for (process_record* p = head_; p; p = p->next) {
        if (!p->blocked_on) continue;
        report += "  process '" + p->label() + "' is blocked ";
        p->blocked_on->describe(report);
        report += "\n";
        ++listed;
    }
    report += "(" + std::to_string(listed) + " blocked processes)";
    report_ = std::move(report);

    bool woke = false;
    for (process_record* p = head_; p; p = p->next) {
        waiter* w = p->blocked_on;
        if (w && w->abortable && w->commit(waiter::aborted)) {
            w->wake();
            woke = true;
        }
    }
    return woke;
}

}  // namespace csp::detail
