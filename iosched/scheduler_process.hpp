#pragma once
// The IO scheduler process of one runtime (scheduler.hpp): it reads requests
// (protocol.hpp) into its registration table, and dispatches the poll results
// an idle worker hands over to it (handover.hpp).
//
// Invariants
//  1. Only the scheduler process touches the registration table, and the
//     backend except as the hand-over allows.
//  2. A request is either answered by the scheduler or refused to its sender:
//     senders take send_lock_ and check stopped_, which the scheduler sets
//     under that lock before it answers what is still queued with `stopped`.
#include <memory>
#include <string>

#include "csp/channel.hpp"
#include "csp/idle_poller.hpp"
#include "csp/process_group.hpp"
#include "csp/runtime_ref.hpp"
#include "csp/service.hpp"
#include "csp/spinlock.hpp"
#include "iosched/handover.hpp"
#include "iosched/registration_table.hpp"
#include "iosched/scheduler.hpp"

namespace csp::io::detail {

class scheduler final : public csp::service,
                        public csp::idle_poller,
                        public std::enable_shared_from_this<scheduler> {
public:
    scheduler(csp::runtime_ref rt, scheduler_options o);
    ~scheduler() override;

    // Spawns the process and installs the idle poller. Called once, by the
    // service factory, so a scheduler in the runtime's table always runs.
    void start();
    scheduler_handle handle() { return scheduler_handle(shared_from_this()); }
    // Throws io_error(stopped) once the scheduler has stopped (invariant 2).
    void send(request r);
    scheduler_stats stats() const;
    backend_kind kind() const noexcept { return kind_; }

    // service
    void stop() noexcept override;
    void join() noexcept override;

    // idle_poller
    bool poll_until(clock::time_point until) noexcept override { return handover_.poll_until(until); }
    void wake() noexcept override { handover_.wake(); }

private:
    void body();
    void apply(request& r);
    void shutdown() noexcept;

    csp::runtime_ref rt_;
    backend_kind kind_;
    std::unique_ptr<backend> backend_;
    registration_table table_;
    handover handover_;
    csp::channel<request> channel_;
    csp::reader<request> in_;
    csp::writer<request> out_;

    csp::spinlock send_lock_;
    bool stopped_ = false;

    csp::process_group process_;
};

}  // namespace csp::io::detail
