#pragma once
// Runtime services: the public way for a part above the core to live beside
// a runtime's processes (the IO scheduler is one).
//
// A service is made on first use from inside the runtime and stored there
// under a key; run() stops and joins every service once the root process has
// returned, before the runtime's threads go away. A service's own processes
// are usually daemons (process_group.hpp): waiting for requests is their
// job, so the deadlock detector does not report them.
//
// A service is found or made through csp::runtime_ref (runtime_ref.hpp). One
// that waits for events outside the runtime (file descriptors) may install
// itself as the runtime's idle poller (idle_poller.hpp).

namespace csp {

class service {
public:
    virtual ~service() = default;
    // Ask the service to end. Called once, from the thread running run().
    virtual void stop() noexcept = 0;
    // Wait until the service's processes have ended.
    virtual void join() noexcept = 0;
};

}  // namespace csp
