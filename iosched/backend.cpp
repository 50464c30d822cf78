#include "iosched/backend.hpp"

#include <algorithm>

namespace csp::io {

std::string_view name(backend_kind k) { return k == backend_kind::poll ? "poll" : "epoll"; }

namespace detail {

std::unique_ptr<backend> make_poll_backend();
std::unique_ptr<backend> make_epoll_backend();

std::unique_ptr<backend> make_backend(backend_kind k) {
    return k == backend_kind::poll ? make_poll_backend() : make_epoll_backend();
}

timespec_until::timespec_until(clock::time_point until) {
    if (until == clock::time_point::max()) {
        forever_ = true;
        return;
    }
    const auto left = std::max(until - clock::now(), clock::duration::zero());
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    ts_.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    ts_.tv_nsec = static_cast<long>(ns % 1'000'000'000);
}

}  // namespace detail
}  // namespace csp::io
