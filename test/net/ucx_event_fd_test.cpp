// What a node does when its UCX worker's event fd fails under the progress
// process (net/ucx_transport.cpp), or never wakes it. This program is
// linked with --wrap=ucp_worker_get_efd: the node is handed the read end of
// a pipe of the test's own in place of UCX's event fd, either kept readable
// (the progress process then never sleeps long, and the node works) and
// closed by the test when it wants the fault, or never written (every
// wake-up UCX would give is lost).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <ucp/api/ucp.h>

#include "csp/alt.hpp"
#include "csp/timer.hpp"
#include "iosched/wait.hpp"
#include "net/node.hpp"
#include "net/port.hpp"
#include "net_fixture.hpp"

namespace {
int substitute_fd = -1;  // handed out once, by the next call
}  // namespace

extern "C" ucs_status_t __real_ucp_worker_get_efd(ucp_worker_h worker, int* fd);
extern "C" ucs_status_t __wrap_ucp_worker_get_efd(ucp_worker_h worker, int* fd) {
    const ucs_status_t s = __real_ucp_worker_get_efd(worker, fd);
    if (s == UCS_OK && substitute_fd >= 0) *fd = std::exchange(substitute_fd, -1);
    return s;
}

namespace {

using namespace std::chrono_literals;

// Rank 0 of a 2-node job whose links go over UCX.
csp::net::node_options over_ucx_options(const csp::net::nameserver& ns, const std::string& job) {
    csp::net::node_options o = net_test::options_for(ns, job, 0, 2);
    o.transport = csp::net::transport_kind::ucx;
    return o;
}

// The progress process ended silently on any csp::error, an io_error of the
// worker's event fd among them: the node then took nothing more over UCX,
// and a wait on a live peer that sent nothing more waited until that peer
// left. Now the links over UCX end with the reason, and the wait gets it.
TEST(net_ucx_event_fd, a_failed_event_fd_ends_the_nodes_ucx_links_with_the_reason) {
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    ASSERT_EQ(::write(pipe_fds[1], "x", 1), 1);  // readable until closed
    substitute_fd = pipe_fds[0];

    csp::net::nameserver ns;
    const pid_t peer = net_test::spawn_node(NET_TEST_PEER, {"hold"}, ns, "efd", 1, 2);
    std::string reply, after;
    std::size_t over_ucx = 0;
    csp::run([&] {
        csp::net::node self(over_ucx_options(ns, "efd"));
        auto back = self.open(2);
        self.send(1, 1, std::uint64_t{7});
        csp::net::message m;
        if (csp::select(csp::net::input(back, m), csp::timeout(30s)) == 0)
            reply = std::to_string(m.as<std::uint64_t>());
        over_ucx = self.stats().links_over_ucx;

        csp::io::close(pipe_fds[0]);
        // Node 1 sends nothing more and stays: only the fault can end this.
        try {
            if (csp::select(csp::net::input(back, m), csp::timeout(30s)) == 0)
                after = m.failure ? std::string("failure: ") + m.failure->what() : "a message";
            else
                after = "nothing within 30 s";
        } catch (const csp::net::peer_error& e) {
            after = std::string("peer_error: ") + e.what();
        }
        EXPECT_GE(self.stats().faults, 1u);
    });
    ::close(pipe_fds[1]);
    ::kill(peer, SIGKILL);
    ::waitpid(peer, nullptr, 0);

    EXPECT_EQ(reply, "7");
    EXPECT_EQ(over_ucx, 1u);
    EXPECT_NE(after.find("UCX progress stopped"), std::string::npos) << after;
    EXPECT_NE(after.find("fd " + std::to_string(pipe_fds[0])), std::string::npos) << after;
}

// A node whose UCX event fd never woke its sleeping progress process took
// nothing more over UCX, for good: its peers' messages and goodbyes stayed
// in shared memory (seen once as a stopped and resumed node of the fault
// injection test that its peers waited 10 s for, then left). The sleep now
// has a limit: the reply, sent while the node sleeps, arrives within it,
// and the node counts the late wake-up.
TEST(net_ucx_event_fd, a_wakeup_the_event_fd_never_gives_only_delays_the_message) {
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);  // never written: never readable
    substitute_fd = pipe_fds[0];

    csp::net::nameserver ns;
    // The reply comes 250 ms after the request: the node has long stopped
    // spinning by then and sleeps on the pipe, in the middle of its third
    // sleep of at most 100 ms. (At 300 ms, a multiple of the limit, the
    // reply raced the node's own wake-up, which then sometimes took it in
    // the looks after the first, as no late wake-up.)
    const pid_t peer = net_test::spawn_node(NET_TEST_PEER, {"hold", "250"}, ns, "efd-quiet", 1, 2);
    std::string reply;
    csp::net::node_stats st;
    double waited_ms = 0;
    csp::run([&] {
        csp::net::node self(over_ucx_options(ns, "efd-quiet"));
        auto back = self.open(2);
        const auto sent = std::chrono::steady_clock::now();
        self.send(1, 1, std::uint64_t{11});
        csp::net::message m;
        if (csp::select(csp::net::input(back, m), csp::timeout(30s)) == 0)
            reply = std::to_string(m.as<std::uint64_t>());
        waited_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - sent).count();
        st = self.stats();
    });
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    ::kill(peer, SIGKILL);
    ::waitpid(peer, nullptr, 0);

    EXPECT_EQ(reply, "11");
    EXPECT_EQ(st.links_over_ucx, 1u);
    EXPECT_GE(st.late_wakeups, 1u) << "the reply came without the sleep's limit";
    EXPECT_LT(waited_ms, 5000.0);
}

// A dead peer's last messages wait in this node's worker, and its death is
// seen on the TCP connection, which the IO scheduler watches apart from the
// worker: the liveness process has the progress process take them in
// before the loss is told (drain_for_liveness). Here the event fd never
// wakes the progress process, which sleeps up to 100 ms at a time: the
// peer answers, sends 50 ms later and dies 20 ms after that, all before
// the sleep ends. Without the drain the loss came first and everything
// the peer sent, its answer too, was dropped behind it.
TEST(net_ucx_event_fd, a_dead_peers_messages_still_in_the_worker_arrive_before_its_loss) {
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);  // never written: never readable
    substitute_fd = pipe_fds[0];

    csp::net::nameserver ns;
    constexpr std::uint64_t n = 40;
    const pid_t peer =
        net_test::spawn_node(NET_TEST_PEER, {"burst", std::to_string(n), "50", "20"}, ns, "efd-drain", 1, 2);
    std::vector<std::uint64_t> got;
    std::string error;
    std::size_t over_ucx = 0;
    csp::run([&] {
        csp::net::node self(over_ucx_options(ns, "efd-drain"));
        auto inbox = self.open(1);
        auto back = self.open(2);
        self.send(1, 1, std::uint64_t{7});
        try {
            // The answer too waits in the worker until the drain.
            got.push_back(back.receive<std::uint64_t>());
            for (;;) {
                csp::net::message m;
                if (csp::select(csp::net::input(inbox, m), csp::timeout(30s)) != 0) break;
                got.push_back(m.as<std::uint64_t>());
            }
        } catch (const csp::net::peer_error& e) {
            EXPECT_EQ(e.peer(), 1);
            error = e.what();
        }
        over_ucx = self.stats().links_over_ucx;
    });
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    int status = 0;
    ::waitpid(peer, &status, 0);

    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(over_ucx, 1u);
    std::vector<std::uint64_t> sent{7};  // the answer, then the burst
    for (std::uint64_t i = 0; i < n; ++i) sent.push_back(i);
    EXPECT_EQ(got, sent);
    EXPECT_NE(error.find("without a goodbye (the node died or was killed)"), std::string::npos) << error;
}

}  // namespace
