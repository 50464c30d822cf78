#pragma once
// A process's standing registration of one file descriptor with the IO
// scheduler, for a process that serves the fd again and again (a connection's
// reader or writer).
//
//   csp::io::watch in(fd, csp::io::interest::read);
//   for (;;) {
//       in.wait();                                  // this process blocks, no other
//       ssize_t n = ::read(fd, buf, sizeof buf);    // non-blocking fd: EAGAIN means wait again
//       ...
//   }
//
//   csp::io::io_events ev;                          // or among other events:
//   switch (csp::select(in.ready(ev), csp::input(commands, cmd), csp::timeout(1s))) { ... }
//
// In the scheduler's terms (protocol.hpp): the first wait registers the fd;
// each later wait is the confirmation "keep it", which re-arms it; destroying
// the watch is "remove it". Readiness is poll's: level-triggered and only a
// hint, so use non-blocking descriptors and treat EAGAIN as "wait again".
//
// The first wait of a watch asks the kernel directly (poll with no timeout)
// before it registers: an fd that is ready already costs one system call and
// no request. This is what keeps one-off waits (wait_for, fd_guard) live when
// the scheduler is flooded: a wait that registers, times out and cancels
// could otherwise always find its registration applied after its own timeout
// and never see the fd ready, however long the data had been waiting.
//
// What a wait reports:
//   read   POLLIN (data, end of file, or a pending error to read) -> io_events;
//          otherwise POLLERR, POLLHUP or POLLNVAL -> io_error.
//   write  POLLERR, POLLHUP or POLLNVAL -> io_error; POLLOUT -> io_events.
// So a reader whose peer wrote and hung up still reads everything, then end
// of file; a writer whose peer hung up hears it instead of writing into the void.
#include <cstdint>
#include <string>

#include "csp/alt.hpp"
#include "iosched/io_error.hpp"
#include "iosched/protocol.hpp"
#include "iosched/scheduler.hpp"

namespace csp::io {

class watch_guard;

class watch {
public:
    // In a process: uses its runtime's scheduler (started on first use).
    watch(int fd, interest in);
    // Anywhere, including a plain thread given the handle by a process.
    watch(scheduler_handle s, int fd, interest in);
    ~watch();
    watch(watch&& o) noexcept;
    watch& operator=(watch&&) = delete;
    watch(const watch&) = delete;
    watch& operator=(const watch&) = delete;

    // Blocks the caller until the fd is ready for this watch's direction.
    // Throws io_error for the conditions above.
    io_events wait();

    // The same wait as an alternation guard; on commit `out` holds the events.
    // The guard refers to this watch: use it within the select expression.
    watch_guard ready(io_events& out);

    int fd() const noexcept { return fd_; }
    interest direction() const noexcept { return in_; }

    // "fd 7 to become readable", for reports.
    std::string describe() const;

private:
    friend class watch_guard;
    friend io_events wait_for(const scheduler_handle&, int, interest);
    struct oneshot_tag {};
    watch(scheduler_handle s, int fd, interest in, oneshot_tag);

    void arm();
    // Before the first registration only: the fd's readiness now, from the
    // kernel, if it has any for this watch's direction.
    bool ready_now(readiness& r) const;
    io_events take(const readiness& r);

    scheduler_handle sched_;
    int fd_;
    interest in_;
    bool oneshot_ = false;
    std::uint64_t id_;        // 0 once moved from
    bool registered_ = false; // the scheduler holds a registration for us
    bool armed_ = false;      // ...which is armed, or has delivered what we have not read
    csp::channel<readiness> replies_;
    csp::reader<readiness> reader_;
};

class watch_guard final : public csp::guard_base<watch_guard> {
public:
    watch_guard(watch& w, io_events& out) : w_(&w), out_(&out), input_(w.reader_, r_) {}
    watch_guard(const watch_guard&) = delete;
    watch_guard& operator=(const watch_guard&) = delete;

    bool try_complete() override {
        if (!w_->ready_now(r_)) {
            w_->arm();
            if (!input_.try_complete()) return false;
        }
        *out_ = w_->take(r_);
        return true;
    }
    bool enable(csp::wait_node& n) override { return input_.enable(n); }
    void disable(csp::wait_node& n) override { input_.disable(n); }
    void complete(csp::wait_node& n) override {
        input_.complete(n);
        *out_ = w_->take(r_);
    }
    void describe(std::string& out) const override { out += w_->describe(); }

private:
    watch* w_;
    io_events* out_;
    readiness r_;
    csp::input_guard<readiness> input_;
};

inline watch_guard watch::ready(io_events& out) { return watch_guard(*this, out); }

}  // namespace csp::io
