#pragma once
// The IO scheduler: a process that owns a set of file descriptors and
// multiplexes them with poll, so that processes block on IO without blocking
// each other or their thread.
//
//   int fd = ...;                                   // non-blocking socket or pipe
//   csp::io::wait_readable(fd);                     // blocks this process only
//   ::read(fd, buf, n);
//
// A process that wants IO sends a request down the scheduler's request
// channel (protocol.hpp) and reads the answer from its own reply channel;
// wait.hpp and watch.hpp wrap that in calls and alternation guards.
//
// Where poll runs. The scheduler is a daemon process of the runtime, started
// on first use and stopped when the root process returns. When it has nothing
// to do it parks in an alternation over its request channel and an "events"
// guard. The poll itself happens when the runtime has no ready fiber: the idle
// worker calls poll_until() (csp/idle_poller.hpp) instead of sleeping,
// and a fiber woken from another thread interrupts that poll through the
// scheduler's self-pipe. A round trip therefore costs the same system calls
// as a hand-written poll loop plus a few fiber switches, and no thread wake.
//
// Invariants
//  1. Only the scheduler's process touches the fd table and (except as in 2)
//     the backend.
//  2. An idle worker polls the backend only while the scheduler is parked
//     (parked_ != nullptr), and marks that with polling_. The scheduler, once
//     woken, does not leave the alternation (events_guard::disable) until
//     polling_ is false. So the backend is never used by two threads at once.
//  3. Results of a poll (results_) are handed over under lock_, together with
//     the commit of the parked waiter (waiter invariant 2).
//  4. Readiness is delivered once per arming; the registration is disarmed
//     until its owner re-arms it (its confirmation), so a level-triggered fd
//     that its owner has not yet served is not reported again.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "csp/alt.hpp"
#include "csp/idle_poller.hpp"
#include "csp/process_group.hpp"
#include "csp/runtime_ref.hpp"
#include "csp/service.hpp"
#include "csp/spinlock.hpp"
#include "iosched/backend.hpp"
#include "iosched/io_error.hpp"
#include "iosched/protocol.hpp"

namespace csp::io {

// Defaults are fixed; from_environment() applies CSP_IO_BACKEND and
// CSP_IO_SPIN_US (csp/config.hpp). this_scheduler() starts the scheduler
// with from_environment(); start_scheduler(o) uses `o` as given.
struct scheduler_options {
    backend_kind backend = backend_kind::poll;

    // How long an idle worker polls without blocking before it sleeps in
    // poll, while some fd is armed. Zero never spins (no busy CPU, but each
    // reply pays a thread wake-up). 50 us covers a loopback round trip
    // between two processes of one host (bench/iosched_bench).
    clock::duration spin = std::chrono::microseconds(50);

    static scheduler_options from_environment();
};

// Counters, for tests and diagnostics (relaxed; exact once the scheduler is idle).
struct scheduler_stats {
    std::size_t fds = 0;            // descriptors in the set
    std::size_t armed = 0;          // registrations waiting for readiness
    std::uint64_t polls = 0;        // poll system calls made
    std::uint64_t pipe_wakes = 0;   // bytes written to the self-pipe
    std::uint64_t delivered = 0;    // readiness messages sent to processes
};

namespace detail {
class scheduler;
}

// What a process or a plain thread holds to talk to a runtime's scheduler.
// Copies are cheap and refer to the same scheduler.
class scheduler_handle {
public:
    scheduler_handle() = default;

    // Throws io_error(stopped) once the scheduler has ended.
    void send(request r) const;
    scheduler_stats stats() const;
    backend_kind backend() const;
    bool valid() const noexcept { return s_ != nullptr; }

private:
    friend class detail::scheduler;
    explicit scheduler_handle(std::shared_ptr<detail::scheduler> s);
    std::shared_ptr<detail::scheduler> s_;
    csp::writer<request> out_;
};

// The calling process's runtime's scheduler, started with default options on
// first use. Must be called from a process; pass the handle to threads.
scheduler_handle this_scheduler();

// Starts this runtime's scheduler with `o`; usage_error if it already runs.
scheduler_handle start_scheduler(scheduler_options o);

namespace detail {

class scheduler final : public csp::service,
                        public csp::idle_poller,
                        public std::enable_shared_from_this<scheduler> {
public:
    scheduler(csp::runtime_ref rt, scheduler_options o);
    ~scheduler() override;

    void start();
    scheduler_handle handle() { return scheduler_handle(shared_from_this()); }
    csp::writer<request> requests() const { return out_; }
    scheduler_stats stats() const;
    backend_kind kind() const noexcept { return kind_; }

    // service
    void stop() noexcept override;
    void join() noexcept override;

    // idle_poller
    bool poll_until(clock::time_point until) noexcept override;
    void wake() noexcept override;

private:
    class events_guard;

    struct registration {
        std::uint64_t id;
        interest in;
        bool oneshot;
        bool armed;
        csp::writer<readiness> reply;
    };
    using registrations = std::vector<registration>;  // of one fd; usually one or two

    void body();
    void apply(request& r);
    void dispatch();
    void deliver(int fd, registration& reg, readiness::status st, short revents);
    void update_interest(int fd, registrations& regs);
    void shutdown() noexcept;

    csp::runtime_ref rt_;
    backend_kind kind_;
    clock::duration spin_;
    std::unique_ptr<backend> backend_;
    csp::channel<request> channel_;
    csp::reader<request> in_;
    csp::writer<request> out_;
    std::unordered_map<int, registrations> fds_;  // the scheduler process's alone

    // Hand-over between the parked scheduler and an idle worker (invariant 2).
    csp::spinlock lock_;
    csp::wait_node* parked_ = nullptr;
    bool polling_ = false;
    bool results_ready_ = false;
    std::vector<fd_event> results_;

    // Senders take send_lock_ and check stopped_, so that once the scheduler
    // has stopped no request can land in its channel unanswered.
    csp::spinlock send_lock_;
    bool stopped_ = false;
    friend class csp::io::scheduler_handle;

    std::string failure_;  // why a poll failed (set by the poller, read after hand-over)

    std::atomic<std::size_t> armed_{0};
    std::atomic<std::size_t> fd_count_{0};
    std::atomic<std::uint64_t> polls_{0};
    std::atomic<std::uint64_t> pipe_wakes_{0};
    std::atomic<std::uint64_t> delivered_{0};

    csp::process_group process_;
};

}  // namespace detail
}  // namespace csp::io
