#include "iosched/scheduler.hpp"

#include "csp/config.hpp"
#include "csp/runtime_ref.hpp"
#include "iosched/scheduler_process.hpp"

namespace csp::io {

scheduler_options scheduler_options::from_environment() {
    scheduler_options o;
    if (auto b = csp::config::choice("CSP_IO_BACKEND", {"poll", "epoll"}))
        o.backend = *b == "epoll" ? backend_kind::epoll : backend_kind::poll;
    if (auto us = csp::config::number("CSP_IO_SPIN_US", 0, 1'000'000)) o.spin = std::chrono::microseconds(*us);
    return o;
}

void scheduler_handle::send(request r) const {
    if (!s_) throw usage_error("csp::io: request through an empty scheduler_handle");
    s_->send(std::move(r));
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

}  // namespace csp::io
