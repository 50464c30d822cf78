#pragma once
// The messages between processes and the IO scheduler (scheduler.hpp).
//
//   process                                      scheduler
//   watch{id, fd, interest, reply} ---------->   adds the registration, armed
//                                                ... poll reports the fd ...
//                                   <---------   readiness on `reply`; disarmed
//   does its IO
//   rearm{id}   (confirmation: keep it)  ---->   armed again, or
//   cancel{id}  (confirmation: remove it) --->   registration dropped
//
// A registration is armed at most once at a time, so at most one readiness is
// ever unread on its reply channel. That channel has a one-slot overwriting
// buffer: the scheduler's write never blocks, and a later `closed` or
// `stopped` replaces an unread `ready`, because it is the newer truth.
//
// A one-shot watch is dropped by the scheduler as soon as it delivers, so the
// common "wait once" costs one request and one reply.
#include <poll.h>

#include <cstdint>

#include "csp/channel.hpp"

namespace csp::io {

enum class interest : short { read = POLLIN, write = POLLOUT };

inline const char* describe(interest i) { return i == interest::read ? "read" : "write"; }

// What of poll's revents concerns a waiter with interest `in`: its direction,
// and errors, hang-ups and invalid fds, which every waiter must hear. The
// scheduler's table and a watch's own first look filter alike.
inline short relevant_events(short revents, interest in) {
    return static_cast<short>(revents & (static_cast<short>(in) | POLLERR | POLLHUP | POLLNVAL));
}

// What poll reported for the descriptor, as the waiting process sees it.
class io_events {
public:
    io_events() = default;
    explicit io_events(short revents) : revents_(revents) {}

    bool readable() const noexcept { return revents_ & POLLIN; }
    bool writable() const noexcept { return revents_ & POLLOUT; }
    // The peer hung up. A reader that is also readable should read on: the
    // rest of the data, then end of file, are still there.
    bool hangup() const noexcept { return revents_ & POLLHUP; }
    short revents() const noexcept { return revents_; }

private:
    short revents_ = 0;
};

struct readiness {
    enum class status : std::uint8_t { ready, closed, stopped };
    int fd = -1;
    short revents = 0;
    status what = status::ready;
    int error = 0;  // the answer to `close`: errno of close(2), 0 if it worked
};

// `stop` is the runtime's, sent when its root process has returned.
struct request {
    enum class op : std::uint8_t { watch, rearm, cancel, close, stop };
    op what = op::watch;
    int fd = -1;
    interest in = interest::read;
    bool oneshot = false;
    std::uint64_t id = 0;
    // watch: where readiness goes. close: where the scheduler confirms.
    csp::writer<readiness> reply;
};

}  // namespace csp::io
