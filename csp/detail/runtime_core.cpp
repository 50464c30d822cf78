#include "csp/detail/runtime_core.hpp"

#include "csp/waiter.hpp"
#include "csp/detail/source_place.hpp"
#include "csp/detail/thread_census.hpp"

namespace csp::detail {

bool runtime_core::find_deadlock(std::vector<waiter*>& to_wake) {
    if (externals_.load() != 0 || live_.load() == 0) return false;
    std::lock_guard lk(registry_mutex_);
    if (registered_ != live_.load()) return false;  // a process has yet to start
    if (registered_ == daemons_) return false;        // only services are left
    thread_census::begin_walk();
    auto awake = [](const process_record* p) {
        const waiter* w = p->blocked_on.load(std::memory_order_acquire);
        return w == nullptr || !w->is_waiting() || w->site()->reachable_from_outside();
    };
    if (awake_hint_ && awake(awake_hint_)) return false;
    for (process_record* p = head_; p; p = p->next) {
        if (awake(p)) {
            awake_hint_ = p;
            return false;
        }
    }

    std::string report = "deadlock: every process is blocked and nothing can wake any of them\n";
    for (process_record* p = head_; p; p = p->next) {
        if (p->daemon) continue;
        report.append("  process '").append(p->label()).append("' is blocked ");
        p->blocked_on.load(std::memory_order_relaxed)->site()->describe(report);
        if (p->made_at.line() != 0) report.append(" (started at ").append(source_place(p->made_at)).append(")");
        report += "\n";
    }
    report.append("(").append(std::to_string(registered_ - daemons_)).append(" blocked processes)");
    report_ = std::move(report);

    const std::size_t before = to_wake.size();
    for (process_record* p = head_; p; p = p->next) {
        waiter* w = p->blocked_on.load(std::memory_order_relaxed);
        if (!p->daemon && w->abortable && w->commit(waiter::aborted)) to_wake.push_back(w);
    }
    return to_wake.size() > before;
}

bool runtime_core::check_deadlock() {
    std::vector<waiter*> to_wake;
    if (!find_deadlock(to_wake)) return false;
    for (waiter* w : to_wake) w->wake();
    return true;
}

}  // namespace csp::detail
