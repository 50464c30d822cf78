#include "iosched/watch.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <cstring>
#include <utility>

#include "csp/preemption.hpp"

namespace csp::io {

namespace {

std::uint64_t next_id() {
    static std::atomic<std::uint64_t> counter{0};
    return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}

// The pending error of fd if it is a socket with one (reading it clears it).
int pending_error(int fd) {
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return 0;
    return err;
}

}  // namespace

watch::watch(int fd, interest in) : watch(this_scheduler(), fd, in) {}

watch::watch(scheduler_handle s, int fd, interest in)
    : sched_(std::move(s)),
      fd_(fd),
      in_(in),
      id_(next_id()),
      replies_("fd " + std::to_string(fd) + (in == interest::read ? " readable" : " writable"),
               csp::buffer::overwriting(1), csp::sharing::one_to_one),
      reader_(replies_.reader()) {
    if (!sched_.valid()) throw usage_error("csp::io::watch: empty scheduler_handle");
}

watch::watch(scheduler_handle s, int fd, interest in, oneshot_tag) : watch(std::move(s), fd, in) {
    oneshot_ = true;
}

watch::watch(watch&& o) noexcept
    : sched_(std::move(o.sched_)),
      fd_(o.fd_),
      in_(o.in_),
      oneshot_(o.oneshot_),
      id_(std::exchange(o.id_, 0)),
      registered_(std::exchange(o.registered_, false)),
      armed_(o.armed_),
      replies_(std::move(o.replies_)),
      reader_(std::move(o.reader_)) {}

watch::~watch() {
    if (id_ == 0 || !registered_) return;
    request r;
    r.what = request::op::cancel;
    r.fd = fd_;
    r.id = id_;
    try {
        sched_.send(std::move(r));
    } catch (const csp::error&) {
        // The scheduler has stopped: it holds no registration any more.
    }
}

std::string watch::describe() const {
    return "waiting for fd " + std::to_string(fd_) +
           (in_ == interest::read ? " to become readable" : " to become writable");
}

void watch::arm() {
    if (armed_) return;
    request r;
    r.fd = fd_;
    r.in = in_;
    r.id = id_;
    if (registered_) {
        r.what = request::op::rearm;
    } else {
        r.what = request::op::watch;
        r.oneshot = oneshot_;
        r.reply = replies_.writer();
    }
    sched_.send(std::move(r));
    registered_ = true;
    armed_ = true;
}

bool watch::ready_now(readiness& r) const {
    if (registered_ || id_ == 0) return false;
    pollfd p{fd_, static_cast<short>(in_), 0};
    if (::poll(&p, 1, 0) != 1) return false;  // not ready, or EINTR: the scheduler will tell
    const short relevant = relevant_events(p.revents, in_);
    if (relevant == 0) return false;
    r = readiness{fd_, relevant, readiness::status::ready, 0};
    return true;
}

io_events watch::wait() {
    if (!registered_) {
        // A first wait on an fd that is ready already is answered without a
        // switch, so it is a preemption point (before the look: a yield after
        // it could let another process drain the fd first). Later waits read
        // the scheduler's channel, which counts by itself.
        csp::preemption_point();
        if (readiness r; ready_now(r)) return take(r);
    }
    arm();
    return take(reader_.read());
}

io_events watch::take(const readiness& r) {
    armed_ = false;
    if (oneshot_) registered_ = false;  // the scheduler dropped it on delivery
    auto waiting = [this] { return std::string(" while waiting to ") + io::describe(in_); };
    switch (r.what) {
        case readiness::status::closed:
            registered_ = false;
            throw io_error(fd_, io_error::condition::closed, "closed by csp::io::close" + waiting());
        case readiness::status::stopped:
            registered_ = false;
            throw io_error(fd_, io_error::condition::stopped,
                           "the IO scheduler has stopped (its runtime ended)" + waiting());
        case readiness::status::ready: break;
    }
    const short ev = r.revents;
    if (ev & POLLNVAL)
        throw io_error(fd_, io_error::condition::invalid_fd, "not an open file descriptor (POLLNVAL)" + waiting());
    if (in_ == interest::read && (ev & POLLIN)) return io_events(ev);
    // A socket's pending error says most (a reset); else a hang-up; else a bare POLLERR.
    if (const int pending = (ev & POLLERR) ? pending_error(fd_) : 0)
        throw io_error(fd_, io_error::condition::error,
                       std::string("error condition (POLLERR: ") + std::strerror(pending) + ")" + waiting(), pending);
    if (ev & POLLHUP) throw io_error(fd_, io_error::condition::hangup, "peer hung up (POLLHUP)" + waiting());
    if (ev & POLLERR) throw io_error(fd_, io_error::condition::error, "error condition (POLLERR)" + waiting());
    return io_events(ev);
}

}  // namespace csp::io
