#pragma once
// The runtime as a part above the core sees it: where its services live and
// where its idle poller is installed.
//
//   static const char key = 0;
//   auto rt = csp::runtime_ref::of_calling_process("my::service");
//   bool created;
//   auto s = rt.service<my_service>(&key, [&] { return std::make_shared<my_service>(rt); }, created);
#include <memory>
#include <utility>

#include "csp/idle_poller.hpp"
#include "csp/process.hpp"
#include "csp/service.hpp"

namespace csp {

// A handle on one runtime, as a part above the core sees it. Cheap to copy;
// valid while the runtime runs (a service may keep it for its lifetime).
class runtime_ref {
public:
    // The runtime of the calling process. Throws usage_error naming `who`
    // when the caller is not a process of a running runtime.
    static runtime_ref of_calling_process(const char* who) {
        return runtime_ref(detail::calling_process(who)->runtime());
    }

    // The service stored under `key`, made by make() (returning
    // std::shared_ptr<S>) if there is none yet; `created` says which. Throws
    // usage_error once the runtime has begun stopping its services.
    template <class S, class Make>
    std::shared_ptr<S> service(const void* key, Make&& make, bool& created) const {
        return core_->service<S>(key, std::forward<Make>(make), created);
    }

    // Installs the event source idle workers poll instead of sleeping
    // (nullptr removes it). At most one per runtime.
    void set_idle_poller(idle_poller* p) const noexcept { core_->set_idle_poller(p); }

    friend bool operator==(runtime_ref, runtime_ref) = default;

private:
    explicit runtime_ref(detail::runtime_core* core) noexcept : core_(core) {}
    detail::runtime_core* core_;
};

}  // namespace csp
