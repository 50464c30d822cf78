#include "csp/detail/runtime_core.hpp"

#include "csp/wait_note.hpp"
#include "csp/waiter.hpp"
#include "csp/detail/source_place.hpp"
#include "csp/detail/thread_census.hpp"

namespace csp::detail {

std::string runtime_core::deadlock_report() const {
    std::lock_guard lk(registry_mutex_);
    return report_;
}

void runtime_core::stop_services() {
    std::vector<std::shared_ptr<csp::service>> all;
    {
        std::lock_guard lk(services_mutex_);
        services_stopped_ = true;
        for (auto& [k, s] : services_) all.push_back(s);
    }
    for (auto& s : all) s->stop();
    for (auto& s : all) s->join();
}

void runtime_core::describe_blocked(process_record* p, std::string& out) const {
    out.append("process '").append(p->label()).append("' is blocked ");
    // A library call's note says more than its anonymous channel would.
    if (p->note) {
        out.append("waiting for ");
        p->note->describe(out);
    } else {
        p->blocked_on.load(std::memory_order_relaxed)->site()->describe(out);
    }
    if (p->made_at.line() != 0) out.append(" (started at ").append(source_place(p->made_at)).append(")");
}

void runtime_core::serve_requests(std::vector<waiter*>& to_wake, bool externals) {
    if (!sample_wanted_ && !abort_with_) return;
    // Quiet: every program process blocked without a deadline, on nothing a
    // thread outside could complete, and none about to start.
    bool quiet = !externals && registered_ == live_.load();
    std::uint64_t activity = started_ + stopped_;
    for (process_record* p = head_; p; p = p->next) {
        if (p->daemon) continue;
        activity += p->waits.load(std::memory_order_relaxed);
        const waiter* w = p->blocked_on.load(std::memory_order_acquire);
        if (w == nullptr || !w->is_waiting() || w->site()->reachable_from_outside()) quiet = false;
    }
    if (sample_wanted_) {
        quiet_sample s{quiet, activity, {}};
        if (sample_described_)
            for (process_record* p = head_; p; p = p->next) {
                if (p->daemon) continue;
                const waiter* w = p->blocked_on.load(std::memory_order_acquire);
                if (w != nullptr && w->is_waiting()) describe_blocked(p, s.blocked.emplace_back());
                else s.blocked.push_back("process '" + p->label() + "' is ready to run");
            }
        sample_ = std::move(s);
        sample_wanted_ = false;
    }
    // An abort found by others applies only while this runtime is still
    // quiet; if a process moved since, the verdict is stale and dropped.
    if (abort_with_) {
        aborted_ = quiet;
        if (quiet) {
            report_ = std::move(*abort_with_);
            for (process_record* p = head_; p; p = p->next) {
                waiter* w = p->blocked_on.load(std::memory_order_relaxed);
                if (!p->daemon && w->abortable && w->commit(waiter::aborted)) to_wake.push_back(w);
            }
        }
        abort_with_.reset();
    }
}

void runtime_core::request_sample(bool describe) {
    std::lock_guard lk(registry_mutex_);
    sample_wanted_ = true;
    sample_described_ = describe;
    sample_.reset();
}

std::optional<quiet_sample> runtime_core::take_sample() {
    std::lock_guard lk(registry_mutex_);
    return std::exchange(sample_, std::nullopt);
}

void runtime_core::request_abort(std::string report) {
    std::lock_guard lk(registry_mutex_);
    abort_with_ = std::move(report);
    aborted_.reset();
}

std::optional<bool> runtime_core::abort_outcome() {
    std::lock_guard lk(registry_mutex_);
    return aborted_;
}

bool runtime_core::find_deadlock(std::vector<waiter*>& to_wake) {
    if (live_.load() == 0) return false;
    std::lock_guard lk(registry_mutex_);
    const std::size_t served = to_wake.size();
    serve_requests(to_wake, externals_.load() != 0);
    if (to_wake.size() > served) return true;
    if (externals_.load() != 0) return false;
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
        report.append("  ");
        describe_blocked(p, report);
        report += "\n";
    }
    const std::size_t blocked = registered_ - daemons_;
    report.append("(")
        .append(std::to_string(blocked))
        .append(blocked == 1 ? " blocked process)" : " blocked processes)");
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
