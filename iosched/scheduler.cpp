#include "iosched/scheduler.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <thread>
#include <utility>

#include "csp/config.hpp"
#include "csp/process.hpp"

namespace csp::io {

scheduler_options scheduler_options::from_environment() {
    scheduler_options o;
    if (auto b = csp::config::choice("CSP_IO_BACKEND", {"poll", "epoll"}))
        o.backend = *b == "epoll" ? backend_kind::epoll : backend_kind::poll;
    if (auto us = csp::config::number("CSP_IO_SPIN_US", 0, 1'000'000)) o.spin = std::chrono::microseconds(*us);
    return o;
}

// ---- handle -------------------------------------------------------------------

scheduler_handle::scheduler_handle(std::shared_ptr<detail::scheduler> s)
    : s_(std::move(s)), out_(s_->requests()) {}

void scheduler_handle::send(request r) const {
    if (!s_) throw usage_error("csp::io: request through an empty scheduler_handle");
    std::lock_guard lk(s_->send_lock_);
    if (s_->stopped_)
        throw io_error(r.fd, io_error::condition::stopped, "the IO scheduler has stopped (its runtime ended)");
    out_.write(std::move(r));  // unbounded buffer: never suspends under the lock
}

scheduler_stats scheduler_handle::stats() const {
    if (!s_) throw usage_error("csp::io: stats of an empty scheduler_handle");
    return s_->stats();
}

backend_kind scheduler_handle::backend() const {
    if (!s_) throw usage_error("csp::io: backend of an empty scheduler_handle");
    return s_->kind();
}

namespace {

const char service_key = 0;

std::shared_ptr<detail::scheduler> find_or_start(const char* who, const scheduler_options* o, bool& created) {
    const auto rt = csp::runtime_ref::of_calling_process(who);
    return rt.service<detail::scheduler>(
        &service_key,
        [&] {
            auto s = std::make_shared<detail::scheduler>(rt, o ? *o : scheduler_options::from_environment());
            s->start();
            return s;
        },
        created);
}

}  // namespace

scheduler_handle this_scheduler() {
    bool created;
    return find_or_start("csp::io::this_scheduler", nullptr, created)->handle();
}

scheduler_handle start_scheduler(scheduler_options o) {
    bool created;
    auto s = find_or_start("csp::io::start_scheduler", &o, created);
    if (!created)
        throw usage_error("csp::io::start_scheduler: this runtime's IO scheduler is already running "
                          "(start it before the first IO wait)");
    return s->handle();
}

// ---- scheduler ----------------------------------------------------------------

namespace detail {

// The scheduler's side of the hand-over with idle workers (invariant 2).
class scheduler::events_guard final : public csp::guard_base<events_guard> {
public:
    explicit events_guard(scheduler& s) : s_(s) {}

    bool try_complete() override {
        std::lock_guard lk(s_.lock_);
        return std::exchange(s_.results_ready_, false);
    }
    bool enable(csp::wait_node& n) override {
        std::lock_guard lk(s_.lock_);
        if (s_.results_ready_) return true;
        s_.parked_ = &n;
        return false;
    }
    void disable(csp::wait_node&) override {
        // Woken by a request while a worker may still be in the poll: make it
        // return, and wait, before touching the backend again.
        s_.lock_.lock();
        s_.parked_ = nullptr;
        for (int spins = 0; s_.polling_; ++spins) {
            s_.lock_.unlock();
            if (s_.backend_->wake()) s_.pipe_wakes_.fetch_add(1, std::memory_order_relaxed);
            if (spins > 64) std::this_thread::yield(); else csp::spin_pause();
            s_.lock_.lock();
        }
        s_.lock_.unlock();
    }
    void complete(csp::wait_node&) override {
        std::lock_guard lk(s_.lock_);
        s_.results_ready_ = false;
    }
    void describe(std::string& out) const override {
        out.append("readiness of ").append(std::to_string(s_.armed_.load())).append(" file descriptors");
    }
    // The outside world can wake the scheduler while it watches something.
    bool reachable_from_outside() const override { return s_.armed_.load() > 0; }

private:
    scheduler& s_;
};

scheduler::scheduler(csp::runtime_ref rt, scheduler_options o)
    : rt_(rt),
      kind_(o.backend),
      spin_(o.spin),
      backend_(make_backend(o.backend)),
      channel_("iosched requests", csp::buffer::unbounded(), csp::sharing::any_to_one),
      in_(channel_.reader()),
      out_(channel_.writer()) {
    results_.reserve(64);
}

scheduler::~scheduler() = default;

// Called by the service factory: a scheduler is stored in the runtime, and so
// ever stopped and joined, only once its process has been spawned.
void scheduler::start() {
    process_.spawn(csp::proc("iosched", [self = shared_from_this()] { self->body(); }), csp::process_kind::daemon);
    rt_.set_idle_poller(this);
}

void scheduler::stop() noexcept {
    std::lock_guard lk(send_lock_);
    if (stopped_) return;
    request r;
    r.what = request::op::stop;
    try {
        out_.write(std::move(r));
    } catch (...) {
    }
}

void scheduler::join() noexcept {
    process_.wait();
}

scheduler_stats scheduler::stats() const {
    return {fd_count_.load(std::memory_order_relaxed), armed_.load(std::memory_order_relaxed),
            polls_.load(std::memory_order_relaxed), pipe_wakes_.load(std::memory_order_relaxed),
            delivered_.load(std::memory_order_relaxed)};
}

void scheduler::wake() noexcept {
    if (backend_->wake()) pipe_wakes_.fetch_add(1, std::memory_order_relaxed);
}

bool scheduler::poll_until(clock::time_point until) noexcept {
    {
        std::lock_guard lk(lock_);
        if (parked_ == nullptr || polling_ || results_ready_) return false;
        polling_ = true;
    }
    polls_.fetch_add(1, std::memory_order_relaxed);
    bool failed = false;
    try {
        // Spin first: a reply that comes back within `spin_` is seen without
        // the sleep and wake-up of a blocking poll (tens of microseconds on a
        // busy machine). A wake-up, a result or the deadline ends the spin.
        bool woken = false;
        if (spin_ > clock::duration::zero() && armed_.load(std::memory_order_relaxed) > 0) {
            const auto stop = std::min(until, clock::now() + spin_);
            while (results_.empty() && !woken && !backend_->wake_pending() && clock::now() < stop) {
                woken = backend_->wait(clock::time_point{}, results_);
                // Between polls, let any other runnable thread of the machine
                // have the core: with more processes than cores (ranks of a
                // job on one host) a spin that does not yield delays the very
                // peer whose reply it waits for. On an idle core this returns
                // at once.
                if (results_.empty() && !woken) std::this_thread::yield();
            }
        }
        if (results_.empty() && !woken) backend_->wait(until, results_);
    } catch (const std::exception& e) {
        failure_ = e.what();
        failed = true;
    }
    std::lock_guard lk(lock_);
    polling_ = false;
    if (!results_.empty() || failed) {
        results_ready_ = true;
        if (parked_ && parked_->commit()) parked_->owner->wake();
        parked_ = nullptr;
    }
    return true;
}

void scheduler::body() {
    events_guard events(*this);
    csp::alternation alt;
    request r;
    try {
        for (;;) {
            if (alt.fair_select(csp::input(in_, r), events) == 0) {
                if (r.what == request::op::stop) break;
                apply(r);
                r = request{};  // let go of the reply end
            } else {
                dispatch();
            }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "csp::io: the IO scheduler failed and stops: %s\n", e.what());
    }
    shutdown();
}

void scheduler::apply(request& r) {
    auto find = [&](registrations& regs) {
        return std::find_if(regs.begin(), regs.end(), [&](const registration& g) { return g.id == r.id; });
    };
    switch (r.what) {
        case request::op::watch: {
            if (r.fd < 0) {  // poll would ignore it and the waiter would never hear
                r.reply.write(readiness{r.fd, POLLNVAL, readiness::status::ready, 0});
                delivered_.fetch_add(1, std::memory_order_relaxed);
                return;
            }
            auto [it, added] = fds_.try_emplace(r.fd);
            if (added) fd_count_.fetch_add(1, std::memory_order_relaxed);
            it->second.push_back({r.id, r.in, r.oneshot, true, std::move(r.reply)});
            armed_.fetch_add(1, std::memory_order_relaxed);
            update_interest(r.fd, it->second);
            return;
        }
        case request::op::rearm:
        case request::op::cancel: {
            // An unknown id is a registration already gone (closed, or a
            // one-shot that delivered): nothing to do.
            auto it = fds_.find(r.fd);
            if (it == fds_.end()) return;
            auto reg = find(it->second);
            if (reg == it->second.end()) return;
            if (r.what == request::op::rearm) {
                if (!reg->armed) armed_.fetch_add(1, std::memory_order_relaxed);
                reg->armed = true;
            } else {
                if (reg->armed) armed_.fetch_sub(1, std::memory_order_relaxed);
                it->second.erase(reg);
            }
            update_interest(r.fd, it->second);
            return;
        }
        case request::op::close: {
            if (auto it = fds_.find(r.fd); it != fds_.end()) {
                for (registration& reg : it->second) deliver(r.fd, reg, readiness::status::closed, 0);
                backend_->forget(r.fd);
                fds_.erase(it);
                fd_count_.fetch_sub(1, std::memory_order_relaxed);
            }
            const int rc = ::close(r.fd);
            r.reply.write(readiness{r.fd, 0, readiness::status::closed, rc == 0 ? 0 : errno});
            return;
        }
        case request::op::stop: return;  // handled by body()
    }
}

void scheduler::dispatch() {
    if (!failure_.empty()) throw csp::error(failure_);
    for (const fd_event& ev : results_) {
        auto it = fds_.find(ev.fd);
        if (it == fds_.end()) continue;
        for (registration& reg : it->second) {
            if (!reg.armed) continue;
            const short relevant = static_cast<short>(
                ev.revents & (static_cast<short>(reg.in) | POLLERR | POLLHUP | POLLNVAL));
            if (relevant) deliver(ev.fd, reg, readiness::status::ready, relevant);
        }
        update_interest(ev.fd, it->second);
    }
    results_.clear();
}

void scheduler::deliver(int fd, registration& reg, readiness::status st, short revents) {
    if (reg.armed) armed_.fetch_sub(1, std::memory_order_relaxed);
    reg.armed = false;
    delivered_.fetch_add(1, std::memory_order_relaxed);
    try {
        reg.reply.write(readiness{fd, revents, st, 0});  // one-slot overwriting buffer: never waits
    } catch (const csp::error&) {
        // The reply channel was poisoned by its owner: nobody is listening.
    }
}

// Drops one-shot registrations that have delivered, then tells the backend
// what the remaining armed ones want (nothing, for an fd being served).
void scheduler::update_interest(int fd, registrations& regs) {
    std::erase_if(regs, [](const registration& g) { return g.oneshot && !g.armed; });
    if (regs.empty()) {
        backend_->forget(fd);
        fds_.erase(fd);
        fd_count_.fetch_sub(1, std::memory_order_relaxed);
        return;
    }
    short events = 0;
    for (const registration& g : regs)
        if (g.armed) events |= static_cast<short>(g.in);
    backend_->set_interest(fd, events);
}

// Every registration and every request still queued is answered `stopped`;
// no request can arrive afterwards (send_lock_).
void scheduler::shutdown() noexcept {
    {
        std::lock_guard lk(send_lock_);
        stopped_ = true;
    }
    rt_.set_idle_poller(nullptr);
    for (auto& [fd, regs] : fds_)
        for (registration& reg : regs) deliver(fd, reg, readiness::status::stopped, 0);
    fds_.clear();
    fd_count_.store(0);
    armed_.store(0);
    try {
        request r;
        while (csp::select(csp::input(in_, r), csp::skip()) == 0) {
            if (r.reply.valid()) r.reply.write(readiness{r.fd, 0, readiness::status::stopped, 0});
            r = request{};
        }
    } catch (...) {
    }
}

}  // namespace detail
}  // namespace csp::io
