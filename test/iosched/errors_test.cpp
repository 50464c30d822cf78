// Conditions instead of readiness: each reaches the waiting process as an
// io_error that names the fd and the condition, never as silence or a hang,
// and the other descriptors keep working.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "test/iosched/fd_pair.hpp"
#include "test/iosched/io_fixture.hpp"

using namespace std::chrono_literals;
using csp::io::io_error;
using csp_test::fd_pair;
using csp_test::get_byte;
using csp_test::put_byte;

namespace {

class io_errors : public csp_test::io_suite {};

// Whether the socket at the other end of `peer` is still open: a read of a
// closed peer's socket returns end of file. (Asking whether the closed fd
// *number* is still open cannot tell: another thread of the process may get
// that number the moment it is free, as the runtime's deadlock census does
// when it opens /proc/self/status.)
bool peer_is_open(int peer) {
    char c;
    return ::read(peer, &c, 1) != 0;
}

// Expects `f` to throw io_error with condition `c`, for fd, mentioning `words`.
template <class F>
void expect_io_error(F&& f, int fd, io_error::condition c, const std::string& words) {
    try {
        f();
        ADD_FAILURE() << "no io_error for fd " << fd;
    } catch (const io_error& e) {
        EXPECT_EQ(e.fd(), fd);
        EXPECT_EQ(static_cast<int>(e.cond()), static_cast<int>(c)) << e.what();
        EXPECT_NE(std::string(e.what()).find("fd " + std::to_string(fd)), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
}

TEST_P(io_errors, io_close_fails_the_waiter_and_leaves_other_fds_working) {
    fd_pair doomed, other;
    int other_got = 0;
    csp_test::run_watched([&] {
        auto sched = start();
        csp::par(
            [&] {
                expect_io_error([&] { csp::io::wait_readable(doomed.a()); }, doomed.a(), io_error::condition::closed,
                                "closed by csp::io::close while waiting to read");
            },
            [&] {
                csp::io::wait_readable(other.a());
                other_got = get_byte(other.a());
            },
            [&] {
                csp_test::wait_until_armed(sched, 2);
                const int fd = doomed.a();
                csp::io::close(fd);
                doomed.forget_a();
                EXPECT_FALSE(peer_is_open(doomed.b()));
                put_byte(other.b(), 'k');
            });
        EXPECT_TRUE(csp_test::set_empties(sched));
    }, opts());
    EXPECT_EQ(other_got, 'k');
}

TEST_P(io_errors, a_plain_close_under_a_waiter_is_reported_as_invalid_fd) {
    // Only poll sees a descriptor closed behind its back, and only at its next
    // poll: with one thread that is the next idle moment.
    if (!single_thread_poll()) GTEST_SKIP() << "needs the poll backend on one thread (see wait.hpp)";
    fd_pair p;
    csp_test::run_watched([&] {
        auto sched = start();
        const int fd = p.a();
        csp::par(
            [&] {
                expect_io_error([&] { csp::io::wait_readable(fd); }, fd, io_error::condition::invalid_fd,
                                "not an open file descriptor (POLLNVAL) while waiting to read");
            },
            [&] {
                csp_test::wait_until_armed(sched);
                p.close_a();
            });
    }, opts());
}

TEST_P(io_errors, a_reader_drains_what_a_hung_up_peer_wrote_then_sees_end_of_file) {
    fd_pair p;
    std::string got;
    bool saw_hangup = false;
    csp_test::run_watched([&] {
        start();
        csp::par(
            [&] {
                csp::io::watch in(p.a(), csp::io::interest::read);
                for (;;) {
                    EXPECT_TRUE(in.wait().readable());
                    int b;
                    while ((b = get_byte(p.a())) >= 0) got += static_cast<char>(b);
                    if (b == -2) break;  // end of file
                }
                // Past the end, the condition itself is reported, not hidden.
                const auto ev = in.wait();
                saw_hangup = ev.readable() && ev.hangup();
            },
            [&] {
                csp::sleep_for(5ms);
                put_byte(p.b(), 'a');
                put_byte(p.b(), 'b');
                p.close_b();
            });
    }, opts());
    EXPECT_EQ(got, "ab");
    EXPECT_TRUE(saw_hangup);
}

TEST_P(io_errors, a_pipe_reader_whose_writer_left_gets_a_hangup_error) {
    fd_pair p(fd_pair::kind::pipe);
    csp_test::run_watched([&] {
        auto sched = start();
        csp::par(
            [&] {
                expect_io_error([&] { csp::io::wait_readable(p.a()); }, p.a(), io_error::condition::hangup,
                                "peer hung up (POLLHUP) while waiting to read");
            },
            [&] {
                csp_test::wait_until_armed(sched);
                p.close_b();
            });
    }, opts());
}

TEST_P(io_errors, a_writer_whose_peer_left_gets_an_error_not_readiness) {
    fd_pair p;
    csp_test::run_watched([&] {
        auto sched = start();
        const std::vector<char> chunk(4096);
        while (::write(p.b(), chunk.data(), chunk.size()) > 0) {
        }
        csp::par(
            [&] {
                try {
                    csp::io::wait_writable(p.b());
                    ADD_FAILURE() << "a writer was told to write to a peer that left";
                } catch (const io_error& e) {
                    EXPECT_EQ(e.fd(), p.b());
                    EXPECT_TRUE(e.cond() == io_error::condition::hangup || e.cond() == io_error::condition::error)
                        << e.what();
                    EXPECT_NE(std::string(e.what()).find("while waiting to write"), std::string::npos) << e.what();
                }
            },
            [&] {
                csp_test::wait_until_armed(sched);
                p.close_a();
            });
    }, opts());
}

TEST_P(io_errors, an_invalid_fd_is_an_error_not_a_hang) {
    int unused = 1000;
    while (::fcntl(unused, F_GETFD) != -1) ++unused;
    csp_test::run_watched([&] {
        start();
        expect_io_error([] { csp::io::wait_readable(-1); }, -1, io_error::condition::invalid_fd, "POLLNVAL");
        expect_io_error([&] { csp::io::wait_writable(unused); }, unused, io_error::condition::invalid_fd,
                        "not an open file descriptor (POLLNVAL) while waiting to write");
        expect_io_error([&] { csp::io::close(unused); }, unused, io_error::condition::invalid_fd,
                        "Bad file descriptor");
    }, opts());
}

TEST_P(io_errors, waits_outlasting_the_runtime_end_with_stopped) {
    fd_pair p;
    csp::io::scheduler_handle sched;
    std::thread waiter;
    std::string thread_error;
    csp_test::run_watched([&] {
        sched = start();
        waiter = std::thread([&, sched] {
            try {
                csp::io::wait_readable(sched, p.a());  // never readable
            } catch (const io_error& e) {
                thread_error = e.what();
            }
        });
        csp_test::wait_until_armed(sched);
        // The root returns: the runtime stops its scheduler.
    }, opts());
    waiter.join();
    EXPECT_NE(thread_error.find("the IO scheduler has stopped (its runtime ended)"), std::string::npos) << thread_error;
    expect_io_error([&] { csp::io::wait_readable(sched, p.a()); }, p.a(), io_error::condition::stopped,
                    "the IO scheduler has stopped");
}

CSP_ON_EVERY_IO_CONFIG(io_errors);

}  // namespace
