#include "iosched/scheduler_process.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <mutex>

#include "csp/alt.hpp"
#include "csp/process.hpp"
#include "csp/timer.hpp"

namespace csp::io::detail {

scheduler::scheduler(csp::runtime_ref rt, scheduler_options o)
    : rt_(rt),
      kind_(o.backend),
      backend_(make_backend(o.backend)),
      table_(*backend_),
      handover_(*backend_, table_, o.spin),
      channel_("iosched requests", csp::buffer::unbounded(), csp::sharing::any_to_one),
      in_(channel_.reader()),
      out_(channel_.writer()) {}

scheduler::~scheduler() = default;

void scheduler::start() {
    process_.spawn(csp::proc("iosched", [self = shared_from_this()] { self->body(); }), csp::process_kind::daemon);
    rt_.set_idle_poller(this);
}

void scheduler::send(request r) {
    std::lock_guard lk(send_lock_);
    if (stopped_)
        throw io_error(r.fd, io_error::condition::stopped, "the IO scheduler has stopped (its runtime ended)");
    out_.write(std::move(r));  // unbounded buffer: never suspends under the lock
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

void scheduler::join() noexcept { process_.wait(); }

scheduler_stats scheduler::stats() const {
    return {table_.fds(), table_.armed(), handover_.polls(), handover_.pipe_wakes(), table_.delivered()};
}

// Requests served in a row before the scheduler polls once itself (body()).
constexpr unsigned requests_per_poll = 16;

void scheduler::body() {
    handover::events_guard events(handover_);
    csp::alternation alt;
    request r;
    std::vector<fd_event> found;
    unsigned since_poll = 0;
    try {
        for (;;) {
            if (alt.fair_select(csp::input(in_, r), events) == 0) {
                if (r.what == request::op::stop) break;
                apply(r);
                r = request{};  // let go of the reply end
                // Under a storm of requests the runtime is never idle while
                // this process is parked, so no worker polls for it: after
                // requests_per_poll requests it polls once itself, without
                // blocking (it holds the backend here). Without this, waits
                // that time out and register again faster than requests are
                // served never see their fd ready (a livelock seen with epoll
                // under AddressSanitizer). The poll leaves wake-ups in the
                // pipe: one may be meant for a worker about to poll for it.
                if (++since_poll >= requests_per_poll) {
                    since_poll = 0;
                    backend_->poll_now(found);
                    if (!found.empty()) table_.dispatch(found);
                    found.clear();
                }
                // A queue that never empties never makes this process wait;
                // the core's turns (csp/detail/turn.hpp) still make it give
                // up its worker, so the timers of the processes whose requests
                // fill the queue fire, and their floods stop.
            } else {
                since_poll = 0;
                auto& results = handover_.results();
                table_.dispatch(results);
                results.clear();
            }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "csp::io: the IO scheduler failed and stops: %s\n", e.what());
    }
    shutdown();
}

void scheduler::apply(request& r) {
    switch (r.what) {
        case request::op::watch: return table_.watch(r.fd, r.id, r.in, r.oneshot, std::move(r.reply));
        case request::op::rearm: return table_.rearm(r.fd, r.id);
        case request::op::cancel: return table_.cancel(r.fd, r.id);
        case request::op::close: {
            table_.close(r.fd);
            const int rc = ::close(r.fd);
            r.reply.write(readiness{r.fd, 0, readiness::status::closed, rc == 0 ? 0 : errno});
            return;
        }
        case request::op::stop: return;  // handled by body()
    }
}

// Every registration and every request still queued is answered `stopped`;
// no request can arrive afterwards (invariant 2).
void scheduler::shutdown() noexcept {
    {
        std::lock_guard lk(send_lock_);
        stopped_ = true;
    }
    rt_.set_idle_poller(nullptr);
    table_.stop_all();
    try {
        request r;
        while (csp::select(csp::input(in_, r), csp::skip()) == 0) {
            if (r.reply.valid()) r.reply.write(readiness{r.fd, 0, readiness::status::stopped, 0});
            r = request{};
        }
    } catch (...) {
    }
}

}  // namespace csp::io::detail
