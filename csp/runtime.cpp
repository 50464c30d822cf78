#include "csp/runtime.hpp"

#include <latch>
#include <thread>
#include <vector>

#include <boost/fiber/algo/round_robin.hpp>
#include <boost/fiber/operations.hpp>

#include "csp/detail/scheduler_policy.hpp"
#include "csp/detail/thread_census.hpp"

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

}  // namespace

struct run_scope::workers {
    workers(std::size_t n, runtime_core* rt) : pool(n, rt), started(static_cast<std::ptrdiff_t>(n)), stops(n) {}
    worker_pool pool;
    std::latch started;
    std::vector<stop_event> stops;
    std::vector<std::thread> threads;
};

run_scope::run_scope(const runtime_options& o) : core_(std::make_shared<runtime_core>(o.stack_size)) {
    thread_census::worker_entered();
    if (o.threads == 1) {
        boost::fibers::use_scheduling_algorithm<single_thread_policy>(core_.get());
        return;
    }
    workers_ = std::make_unique<workers>(o.threads, core_.get());
    core_->set_workers(&workers_->pool);
    for (std::size_t i = 1; i < o.threads; ++i) {
        workers_->threads.emplace_back([this, i] {
            thread_census::worker_entered();
            boost::fibers::use_scheduling_algorithm<worker_policy>(&workers_->pool, i, core_.get());
            workers_->started.count_down();
            workers_->stops[i].wait();
            thread_census::worker_left();
        });
    }
    boost::fibers::use_scheduling_algorithm<worker_policy>(&workers_->pool, 0, core_.get());
    workers_->started.arrive_and_wait();
}

run_scope::~run_scope() {
    core_->clear_idle_hooks();
    if (workers_) {
        for (std::size_t i = 1; i < workers_->stops.size(); ++i) workers_->stops[i].set();
        for (auto& t : workers_->threads) t.join();
    }
    // Back to Boost's default policy; the yield lets this thread's dispatcher
    // release the fibers that finished on it.
    boost::fibers::use_scheduling_algorithm<boost::fibers::algo::round_robin>();
    boost::this_fiber::yield();
    thread_census::worker_left();
}

}  // namespace csp::detail
