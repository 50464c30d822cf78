#pragma once
// A helper that lives beside a runtime's processes (the IO scheduler is one):
// started on first use from inside the runtime, stopped by run() once the root
// process has returned, before the runtime's threads go away.
//
// A service usually runs as a daemon process (runtime_core::make_daemon): a
// process the deadlock detector does not count as a program process, because
// it waits for requests by design.
namespace csp::detail {

class service {
public:
    virtual ~service() = default;
    // Ask the service to end. Called once, from the thread running run().
    virtual void stop() noexcept = 0;
    // Wait until the service's processes have ended.
    virtual void join() noexcept = 0;
};

}  // namespace csp::detail
