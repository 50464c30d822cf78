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
// The parts: this header and scheduler.cpp are the public handle;
// scheduler_process.hpp is the scheduler process (requests in, readiness
// out); registration_table.hpp its record of who waits for what;
// handover.hpp the one racy part, between the parked scheduler and the idle
// worker polling for it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

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
    explicit scheduler_handle(std::shared_ptr<detail::scheduler> s) : s_(std::move(s)) {}
    std::shared_ptr<detail::scheduler> s_;
};

// The calling process's runtime's scheduler, started with default options on
// first use. Must be called from a process; pass the handle to threads.
scheduler_handle this_scheduler();

// Starts this runtime's scheduler with `o`; usage_error if it already runs.
scheduler_handle start_scheduler(scheduler_options o);

}  // namespace csp::io
