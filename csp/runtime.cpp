#include "csp/runtime.hpp"

#include <chrono>
#include <condition_variable>
#include <latch>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <boost/fiber/algo/round_robin.hpp>
#include <boost/fiber/operations.hpp>

#include "csp/deadline_after.hpp"
#include "csp/detail/exception_state.hpp"
#include "csp/detail/fiber_internals.hpp"
#include "csp/detail/scheduler_policy.hpp"
#include "csp/detail/stack_guard.hpp"
#include "csp/detail/thread_census.hpp"
#include "csp/quiescence.hpp"
#include "csp/timer.hpp"

namespace csp::detail {

namespace {

// A one-shot event a worker thread's main context can wait on without
// blocking the fibers of its thread.
class stop_event {
public:
    void wait() {
        lock_.lock();
        if (set_) {
            lock_.unlock();
            return;
        }
        waiter w;
        waiter_ = &w;
        lock_.unlock();
        w.wait();
        std::lock_guard lk(lock_);
    }
    void set() {
        std::lock_guard lk(lock_);
        set_ = true;
        if (waiter_ && waiter_->commit(0)) waiter_->wake();
    }

private:
    spinlock lock_;
    bool set_ = false;
    waiter* waiter_ = nullptr;
};

// The first call of a shared-library function through a lazily bound PLT
// runs the dynamic linker's resolver on the caller's stack, saving the vector
// registers there: 2.5 KiB and more, 5 KiB deep in all (measured:
// libstdc++'s condition_variable::notify_all reaching pthread_cond_broadcast
// from a process on two workers). The executable is linked with -z now, but
// libstdc++ and libc bind lazily. So before the first run, make the calls a
// process's scheduling path makes into them once on an ordinary thread stack:
// waking and waiting on a condition variable, reading the clock, and a throw
// (the unwinder binds and caches on first use).
void prime_lazy_bindings() {
    static std::once_flag once;
    std::call_once(once, [] {
        std::mutex m;
        std::condition_variable cv;
        cv.notify_one();
        cv.notify_all();
        std::unique_lock lk(m);
        (void)cv.wait_until(lk, std::chrono::steady_clock::now());
        (void)cv.wait_for(lk, std::chrono::nanoseconds(0));
        try {
            throw usage_error("priming the unwinder");
        } catch (const usage_error&) {
        }
    });
}

}  // namespace

void check(const runtime_options& o) {
    if (o.threads == 0) throw usage_error("runtime_options::threads must be at least 1");
    if (o.threads > runtime_options::max_threads)
        throw usage_error("runtime_options::threads is " + std::to_string(o.threads) + ": at most " +
                          std::to_string(runtime_options::max_threads) + " worker threads");
    if (o.stack_size > runtime_options::max_stack_size)
        throw usage_error("runtime_options::stack_size is " + std::to_string(o.stack_size) + " bytes: at most " +
                          std::to_string(runtime_options::max_stack_size) + " (1 GiB) per process");
}

struct run_scope::workers {
    workers(std::size_t n, runtime_core* rt) : pool(n, rt), started(static_cast<std::ptrdiff_t>(n)), stops(n) {}
    worker_pool pool;
    std::latch started;
    std::vector<stop_event> stops;
    std::vector<std::thread> threads;
};

run_scope::run_scope(const runtime_options& o)
    : core_(std::make_shared<runtime_core>(o.stack_size, o.threads, o.guard_pages)) {
    // A process that runs into its guard page faults with no stack left: the
    // fault handler needs another one on every thread processes run on.
    const bool guarded = core_->stack_store()->guarded();
    if (guarded) signal_stack_ = std::make_unique<stack_guard::signal_stack>();
    thread_census::run_started();
    runtime_of_this_thread = core_.get();
    prime_lazy_bindings();
    fiber::warm_up_thread();
    if (o.threads == 1) {
        boost::fibers::use_scheduling_algorithm<single_thread_policy>(core_.get());
        return;
    }
    workers_ = std::make_unique<workers>(o.threads, core_.get());
    core_->set_workers(&workers_->pool);
    try {
        for (std::size_t i = 1; i < o.threads; ++i) {
            workers_->threads.emplace_back([this, i, guarded] {
                std::optional<stack_guard::signal_stack> signal_stack;
                if (guarded) signal_stack.emplace();
                thread_census::worker_entered();
                runtime_of_this_thread = core_.get();
                fiber::warm_up_thread();
                boost::fibers::use_scheduling_algorithm<worker_policy>(&workers_->pool, i, core_.get());
                workers_->started.count_down();
                workers_->stops[i].wait();
                thread_census::worker_left();
            });
        }
    } catch (const std::system_error& e) {
        // The destructor will not run: undo what it would. The workers that
        // started hold no process yet, so stopping them loses nothing.
        const std::size_t started = workers_->threads.size() + 1;
        for (std::size_t i = 1; i < started; ++i) workers_->stops[i].set();
        for (auto& t : workers_->threads) t.join();
        runtime_of_this_thread = nullptr;
        thread_census::run_ended();
        throw std::system_error(e.code(), "csp::run could start only " + std::to_string(started) + " of the " +
                                              std::to_string(o.threads) + " worker threads asked for");
    }
    boost::fibers::use_scheduling_algorithm<worker_policy>(&workers_->pool, 0, core_.get());
    workers_->started.arrive_and_wait();
}

run_scope::~run_scope() {
    core_->drain_outside_wakes();  // before any worker's scheduler goes
    core_->clear_idle_hooks();
    if (workers_) {
        for (std::size_t i = 1; i < workers_->stops.size(); ++i) workers_->stops[i].set();
        for (auto& t : workers_->threads) t.join();
    }
    // Back to Boost's default policy; the yield lets this thread's dispatcher
    // release the fibers that finished on it.
    boost::fibers::use_scheduling_algorithm<boost::fibers::algo::round_robin>();
    {
        const exception_state callers;  // run() may be called inside a handler
        boost::this_fiber::yield();
    }
    runtime_of_this_thread = nullptr;
    thread_census::run_ended();
}

}  // namespace csp::detail

namespace csp {

namespace {

// Polls `answer` until it has one or `patience` ran out. A request of
// quiescence.hpp is served when every worker idles, which the caller's
// sleeps allow (a sleeping process is not running, and a daemon's is not
// sampled).
template <class Answer>
auto await_idle_moment(std::chrono::milliseconds patience, Answer answer) -> decltype(answer()) {
    const auto until = deadline_after(patience);
    for (auto nap = std::chrono::microseconds(50);; nap = std::min(nap * 2, std::chrono::microseconds(2000))) {
        if (auto a = answer()) return a;
        if (clock::now() >= until) return std::nullopt;
        csp::sleep_for(nap);
    }
}

detail::runtime_core* runtime_of_caller(const char* what) {
    detail::process_record* self = detail::current_process();
    if (self == nullptr)
        throw usage_error(std::string(what) + " must be called from a process of a running csp::runtime");
    return self->runtime();
}

}  // namespace

std::optional<quiet_sample> sample_quiescence(std::chrono::milliseconds patience, bool describe) {
    detail::runtime_core* rt = runtime_of_caller("csp::sample_quiescence");
    rt->request_sample(describe);
    return await_idle_moment(patience, [rt] { return rt->take_sample(); });
}

bool abort_blocked(std::string report, std::chrono::milliseconds patience) {
    detail::runtime_core* rt = runtime_of_caller("csp::abort_blocked");
    rt->request_abort(std::move(report));
    return await_idle_moment(patience, [rt] { return rt->abort_outcome(); }).value_or(false);
}

}  // namespace csp
