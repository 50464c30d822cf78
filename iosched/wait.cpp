#include "iosched/wait.hpp"

#include <cstring>

namespace csp::io {

io_events wait_for(const scheduler_handle& s, int fd, interest in) {
    watch w(s, fd, in, watch::oneshot_tag{});
    return w.wait();
}

void close(const scheduler_handle& s, int fd) {
    csp::channel<readiness> done("close of fd " + std::to_string(fd), csp::buffer::fifo(1));
    request r;
    r.what = request::op::close;
    r.fd = fd;
    r.reply = done.writer();
    s.send(std::move(r));
    const readiness answer = done.reader().read();
    if (answer.what == readiness::status::stopped)
        throw io_error(fd, io_error::condition::stopped, "the IO scheduler has stopped (its runtime ended)");
    if (answer.error != 0)
        throw io_error(fd, io_error::condition::invalid_fd,
                       std::string("csp::io::close: ") + std::strerror(answer.error));
}

}  // namespace csp::io
