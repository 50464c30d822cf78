// The IO scheduler against a hand-written poll loop.
//
//   iosched_pingpong/csp          two processes ping-pong one byte over a
//                                 socketpair, each waiting through the scheduler
//   iosched_pingpong/csp_epoll    the same on the epoll backend
//   iosched_pingpong/raw_poll     the same exchange in one plain poll loop
//   iosched_pingpong/ratio        csp / raw_poll (target <= 1.5)
//   iosched_pingpong_idle10k/*    the same with 10,000 more registered fds
//                                 that never become ready; the ratio
//                                 pseudo-benchmarks report the growth
//                                 against 0 idle fds
//   iosched_commstime/csp_2_threads  Commstime on two worker threads while a
//                                 process waits on an fd that never becomes
//                                 ready: the idle worker waits in the
//                                 scheduler's poll (ns_per_comm, and
//                                 pipe_wakes_per_s, the writes to the
//                                 scheduler's self-pipe the busy worker made
//                                 to wake it; csp_bench's
//                                 commstime/csp_2_threads is the same
//                                 without the fd)
// Counter: us_per_roundtrip.
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench/commstime_network.hpp"
#include "bench/peer_ratio.hpp"
#include "csp/csp.hpp"
#include "iosched/iosched.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
constexpr int idle_fds = 10'000;

struct socket_pair {
    socket_pair() {
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fd) != 0)
            throw std::runtime_error("socketpair failed (raise the open-file limit?)");
    }
    ~socket_pair() {
        ::close(fd[0]);
        ::close(fd[1]);
    }
    socket_pair(const socket_pair&) = delete;
    socket_pair& operator=(const socket_pair&) = delete;
    int fd[2];
};

// Idle descriptors: n / 2 pairs of which nothing is ever written. Marks the
// benchmark skipped (and returns false) if the open-file limit is too low.
bool make_idle(benchmark::State& state, int n, std::vector<socket_pair>& out) {
    rlimit lim{};
    ::getrlimit(RLIMIT_NOFILE, &lim);
    const rlim_t want = static_cast<rlim_t>(n) + 256;
    if (lim.rlim_cur < want) {
        lim.rlim_cur = std::min(want, lim.rlim_max);
        ::setrlimit(RLIMIT_NOFILE, &lim);
    }
    try {
        out = std::vector<socket_pair>(static_cast<std::size_t>(n / 2));
        return true;
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
        return false;
    }
}

void send_byte(int fd) {
    const char c = 1;
    if (::write(fd, &c, 1) != 1) throw std::runtime_error("write failed");
}
void take_byte(int fd) {
    char c;
    if (::read(fd, &c, 1) != 1) throw std::runtime_error("read found nothing after readiness");
}

void report(benchmark::State& state, const std::string& name, double ns) {
    const double us = ns / 1000.0 / static_cast<double>(state.iterations());
    state.counters["us_per_roundtrip"] = us;
    bench::record(name, us);
}

void pingpong_csp(benchmark::State& state, csp::io::backend_kind backend, int idle, const std::string& name) {
    std::vector<socket_pair> idle_pairs;
    if (!make_idle(state, idle, idle_pairs)) return;
    socket_pair link;
    double ns = 0;
    csp::run([&] {
        csp::io::start_scheduler({.backend = backend});
        csp::par(
            [&] {  // the idle registrations: one waiting process per fd
                csp::par_for(idle_pairs.size() * 2, [&](std::size_t i) {
                    csp::io::wait_readable(idle_pairs[i / 2].fd[i % 2]);
                });
            },
            [&, a = link.fd[0]] {
                csp::io::watch in(a, csp::io::interest::read);
                for (int i = 0; i < 100; ++i) {  // warm up
                    send_byte(a);
                    in.wait();
                    take_byte(a);
                }
                const auto start = clock_type::now();
                for (auto _ : state) {
                    send_byte(a);
                    in.wait();
                    take_byte(a);
                }
                ns = std::chrono::duration<double, std::nano>(clock_type::now() - start).count();
                ::shutdown(a, SHUT_RDWR);                              // ends the echo
                for (auto& p : idle_pairs) send_byte(p.fd[0]), send_byte(p.fd[1]);  // ends the idle waits
            },
            [b = link.fd[1]] {
                csp::io::watch in(b, csp::io::interest::read);
                for (;;) {
                    if (!in.wait().readable()) return;
                    char c;
                    if (::read(b, &c, 1) != 1) return;  // end of file: done
                    send_byte(b);
                }
            });
    });
    report(state, name, ns);
}

// The peer: a plain single-threaded event loop serving both ends, the way a
// hand-written poll server would: one pollfd array holding both sockets (and
// the idle ones), one poll per half trip, then read and answer what is ready.
void pingpong_raw_poll(benchmark::State& state, int idle, const std::string& name) {
    std::vector<socket_pair> idle_pairs;
    if (!make_idle(state, idle, idle_pairs)) return;
    socket_pair link;
    const int a = link.fd[0], b = link.fd[1];
    std::vector<pollfd> set{{a, POLLIN, 0}, {b, POLLIN, 0}};
    for (auto& p : idle_pairs) set.push_back({p.fd[0], POLLIN, 0}), set.push_back({p.fd[1], POLLIN, 0});
    const auto start = clock_type::now();
    for (auto _ : state) {
        send_byte(a);  // the ping; the loop runs until it has come back
        for (bool back = false; !back;) {
            if (::poll(set.data(), set.size(), -1) <= 0) continue;
            if (set[1].revents & POLLIN) {  // b: echo
                take_byte(b);
                send_byte(b);
            }
            if (set[0].revents & POLLIN) {  // a: the pong
                take_byte(a);
                back = true;
            }
        }
    }
    report(state, name, std::chrono::duration<double, std::nano>(clock_type::now() - start).count());
}

void commstime_beside_an_fd(benchmark::State& state) {
    socket_pair never_ready;
    double ns = 0;
    csp::io::scheduler_stats before{}, after{};
    try {
        csp::run(
            [&] {
                bench::commstime_network(
                    [&](const csp::reader<long>& in) {
                        csp::sleep_for(std::chrono::milliseconds(5));  // the fd is armed by now
                        before = csp::io::this_scheduler().stats();
                        const auto start = clock_type::now();
                        for (auto _ : state) benchmark::DoNotOptimize(in.read());
                        ns = std::chrono::duration<double, std::nano>(clock_type::now() - start).count();
                        after = csp::io::this_scheduler().stats();
                        send_byte(never_ready.fd[1]);  // ends the wait
                    },
                    [fd = never_ready.fd[0]] {
                        try {
                            csp::io::wait_readable(fd);
                        } catch (const csp::io::io_error&) {  // the scheduler stopped
                        }
                    });
            },
            {.threads = 2});
    } catch (const csp::poisoned_error&) {
    }
    state.counters["ns_per_comm"] = ns / (static_cast<double>(state.iterations()) * 4);
    state.counters["pipe_wakes_per_s"] = static_cast<double>(after.pipe_wakes - before.pipe_wakes) / (ns / 1e9);
}

}  // namespace

BENCHMARK(commstime_beside_an_fd)->Name("iosched_commstime/csp_2_threads")->UseRealTime();
BENCHMARK_CAPTURE(pingpong_csp, csp, csp::io::backend_kind::poll, 0, "pingpong/csp")
    ->Name("iosched_pingpong/csp")->UseRealTime();
BENCHMARK_CAPTURE(pingpong_csp, csp_epoll, csp::io::backend_kind::epoll, 0, "pingpong/csp_epoll")
    ->Name("iosched_pingpong/csp_epoll")->UseRealTime();
BENCHMARK_CAPTURE(pingpong_raw_poll, raw_poll, 0, "pingpong/raw_poll")
    ->Name("iosched_pingpong/raw_poll")->UseRealTime();
BENCHMARK_CAPTURE(pingpong_csp, csp, csp::io::backend_kind::poll, idle_fds, "idle/csp")
    ->Name("iosched_pingpong_idle10k/csp")->UseRealTime();
BENCHMARK_CAPTURE(pingpong_csp, csp_epoll, csp::io::backend_kind::epoll, idle_fds, "idle/csp_epoll")
    ->Name("iosched_pingpong_idle10k/csp_epoll")->UseRealTime();
BENCHMARK_CAPTURE(pingpong_raw_poll, raw_poll, idle_fds, "idle/raw_poll")
    ->Name("iosched_pingpong_idle10k/raw_poll")->UseRealTime();

int main(int argc, char** argv) {
    bench::register_ratio("iosched_pingpong/ratio", "pingpong/csp", "pingpong/raw_poll");
    bench::register_ratio("iosched_pingpong/ratio_epoll", "pingpong/csp_epoll", "pingpong/raw_poll");
    bench::register_ratio("iosched_pingpong_idle10k/growth_csp", "idle/csp", "pingpong/csp");
    bench::register_ratio("iosched_pingpong_idle10k/growth_csp_epoll", "idle/csp_epoll", "pingpong/csp_epoll");
    bench::register_ratio("iosched_pingpong_idle10k/growth_raw_poll", "idle/raw_poll", "pingpong/raw_poll");
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
}
