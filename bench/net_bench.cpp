// Node/port messaging against raw TCP, between two OS processes on loopback.
// The benchmark starts its peer process itself (this executable, --peer ...).
//
//   rtt_8B/tcp, rtt_1KiB/tcp   node 0 sends to a port of node 1, which sends
//                              the payload back; one round trip per iteration;
//                              the link over TCP (CSP_TRANSPORT=tcp)
//   rtt_*/ucx, stream_*/ucx    the same over UCX (shared memory on one host),
//                              when the build has it; bench/net_vs_mpi_shm
//                              sets these beside OpenMPI's shared memory and
//                              ucx_perftest
//   rtt_*/raw_tcp_blocking     the same bytes echoed over blocking sockets
//   rtt_*/raw_tcp_polling      the same with both sides spinning on
//                              non-blocking sockets (no system call sleeps)
//   stream_1MiB/tcp, /raw_tcp  16 messages of 1 MiB, then a 1-byte
//                              acknowledgement, per iteration
//   stream_1MiB/ucx_landed     the UCX stream as an MPI program writes it:
//                              the sender lends one buffer (loans.hpp), the
//                              receiver expects each batch's messages and
//                              lands them one after another in one buffer
//                              (landing.hpp), as MPI_Recv into one buffer
//   */ratio                    tcp / peer (targets: rtt_8B <= 1.5x
//                              raw_tcp_polling; stream >= 0.8x raw_tcp)
//   deadlock_probes/...        rtt_8B over TCP with the job-wide deadlock
//                              detector probing every 10 ms (50 times its
//                              default rate) and with it off; the ratio is
//                              its cost (target: within noise, <= 1.05)
// Counters: us_per_roundtrip, MB_per_s.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench/peer_ratio.hpp"
#include "csp/csp.hpp"
#include "net/net.hpp"

extern char** environ;

namespace {

using clock_type = std::chrono::steady_clock;
constexpr std::size_t stream_message = 1 << 20;
constexpr int stream_batch = 16;
constexpr csp::net::port_id bench_port = 1;
enum : std::uint64_t { tag_echo = 0, tag_stream = 1, tag_stop = 2, tag_landed_begin = 3, tag_landed_end = 4 };
// The landed stream's messages: one tag each, as a landing needs.
constexpr std::uint64_t landed_tag(std::uint64_t sequence) { return (std::uint64_t{1} << 32) + sequence; }

[[noreturn]] void die(const std::string& what) {
    throw std::runtime_error(what + ": " + std::strerror(errno));
}

// --- raw sockets -------------------------------------------------------------

// As a node's links within one host: no Nagle, and the node's congestion
// control for such links (node_options::local_congestion), set before the
// socket listens or connects as a node does, so that the ratios measure the
// framing and not a difference in the kernel's pacing.
void tune_like_a_link(int fd) {
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const std::string cc = csp::net::node_options::from_environment().local_congestion.value_or("reno");
    if (!cc.empty()) csp::net::set_congestion_control(fd, cc);
}

void read_full(int fd, void* buf, std::size_t n, bool spin) {
    auto* p = static_cast<char*>(buf);
    while (n) {
        const ssize_t r = ::read(fd, p, n);
        if (r > 0) {
            p += r;
            n -= static_cast<std::size_t>(r);
        } else if (r == 0) {
            throw std::runtime_error("peer closed");
        } else if (!(spin && (errno == EAGAIN || errno == EWOULDBLOCK)) && errno != EINTR) {
            die("read");
        }
    }
}

void write_full(int fd, const void* buf, std::size_t n) {
    auto* p = static_cast<const char*>(buf);
    while (n) {
        const ssize_t r = ::send(fd, p, n, MSG_NOSIGNAL);
        if (r > 0) {
            p += r;
            n -= static_cast<std::size_t>(r);
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            die("write");
        }
    }
}

// Starts this program as a peer with `args`, and with this process's
// environment plus `extra` ("NAME=value", replacing any NAME there). Never
// setenv: a nameserver's thread may be reading the environment.
pid_t spawn_peer(const std::vector<std::string>& args, const std::vector<std::string>& extra = {}) {
    std::vector<char*> argv;
    static std::string self = "/proc/self/exe";
    argv.push_back(self.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string entry(*e);
        const auto name = entry.substr(0, entry.find('=') + 1);
        bool replaced = false;
        for (const auto& x : extra) replaced = replaced || x.rfind(name, 0) == 0;
        if (!replaced) env.push_back(entry);
    }
    env.insert(env.end(), extra.begin(), extra.end());
    std::vector<char*> envp;
    for (auto& v : env) envp.push_back(v.data());
    envp.push_back(nullptr);
    pid_t pid;
    if (::posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), envp.data()) != 0) die("posix_spawn");
    return pid;
}

void reap(pid_t pid) {
    int status;
    ::waitpid(pid, &status, 0);
}

// A connected pair: our end (blocking or not) and the peer process.
struct raw_peer {
    int fd = -1;
    pid_t pid = -1;
    raw_peer(const std::string& mode, std::size_t bytes, bool spin) {
        const int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        tune_like_a_link(l);  // accepted connections inherit it
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(l, 1) != 0) die("listen");
        socklen_t len = sizeof a;
        ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len);
        pid = spawn_peer({"--peer", mode, std::to_string(ntohs(a.sin_port)), std::to_string(bytes)});
        fd = ::accept(l, nullptr, nullptr);
        ::close(l);
        if (fd < 0) die("accept");
        if (spin) ::fcntl(fd, F_SETFL, O_NONBLOCK);
    }
    ~raw_peer() {
        ::close(fd);
        reap(pid);
    }
};

int peer_raw(const std::string& mode, int port, std::size_t bytes) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    tune_like_a_link(fd);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) die("connect");
    const bool spin = mode == "raw_polling";
    if (spin) ::fcntl(fd, F_SETFL, O_NONBLOCK);
    std::vector<char> buf(bytes);
    try {
        if (mode == "raw_sink") {
            const char ack = 1;
            for (;;) {
                read_full(fd, buf.data(), buf.size(), false);
                write_full(fd, &ack, 1);
            }
        }
        for (;;) {
            read_full(fd, buf.data(), buf.size(), spin);
            write_full(fd, buf.data(), buf.size());
        }
    } catch (const std::exception&) {
    }
    return 0;
}

void rtt_raw(benchmark::State& state, std::size_t bytes, bool spin, const std::string& figure) {
    raw_peer peer(spin ? "raw_polling" : "raw_blocking", bytes, spin);
    std::vector<char> buf(bytes, 'x');
    write_full(peer.fd, buf.data(), bytes);
    read_full(peer.fd, buf.data(), bytes, spin);
    const auto start = clock_type::now();
    for (auto _ : state) {
        write_full(peer.fd, buf.data(), bytes);
        read_full(peer.fd, buf.data(), bytes, spin);
    }
    const double us = std::chrono::duration<double, std::micro>(clock_type::now() - start).count();
    state.counters["us_per_roundtrip"] = us / static_cast<double>(state.iterations());
    bench::record(figure, us / static_cast<double>(state.iterations()));
}

void stream_raw(benchmark::State& state) {
    raw_peer peer("raw_sink", stream_message * stream_batch, false);
    std::vector<char> buf(stream_message, 'x');
    char ack;
    const auto start = clock_type::now();
    for (auto _ : state) {
        for (int i = 0; i < stream_batch; ++i) write_full(peer.fd, buf.data(), buf.size());
        read_full(peer.fd, &ack, 1, false);
    }
    const double s = std::chrono::duration<double>(clock_type::now() - start).count();
    const double mb = static_cast<double>(state.iterations()) * stream_batch * stream_message / 1e6;
    state.counters["MB_per_s"] = mb / s;
    bench::record("stream/raw_tcp", mb / s);
}

// --- csp nodes ---------------------------------------------------------------

// The receiving side of stream_1MiB/ucx_landed, from its tag_landed_begin to
// its tag_landed_end: each batch expected before the acknowledgement that
// lets the sender send it, each message landed in `into`. Returns how many
// came into a block of their own instead.
std::uint64_t receive_landed(csp::net::node& self, csp::net::port& inbox) {
    std::vector<char> into(stream_message);
    std::uint64_t next = 0, not_landed = 0;
    std::vector<csp::net::landing> expected;
    for (;;) {
        expected.clear();
        for (int i = 0; i < stream_batch; ++i) expected.push_back(self.expect(0, bench_port, landed_tag(next + i)));
        self.send(0, bench_port, char{1});
        for (int i = 0; i < stream_batch; ++i, ++next) {
            csp::net::landing l = self.land(0, bench_port, landed_tag(next), std::span<char>(into));
            csp::net::message m = inbox.receive();
            if (m.tag == tag_landed_end) return not_landed;
            if (m.tag != landed_tag(next) || m.body.size() != into.size())
                throw std::runtime_error("landed stream: message " + std::to_string(next) + " is not the one sent");
            if (m.body.data() != reinterpret_cast<const std::byte*>(into.data())) ++not_landed;
        }
    }
}

int peer_csp() {
    csp::run([] {
        csp::net::node self;
        auto inbox = self.open(bench_port);
        int streamed = 0;
        for (;;) {
            csp::net::message m = inbox.receive();
            if (m.tag == tag_stop) break;
            if (m.tag == tag_landed_begin) {
                self.send(0, bench_port, receive_landed(self, inbox));
            } else if (m.tag == tag_echo) {
                self.send(0, bench_port, m.body);
            } else if (++streamed == stream_batch) {
                streamed = 0;
                self.send(0, bench_port, char{1});
            }
        }
    });
    return 0;
}

// Runs body(node, inbox) as node 0 of a two-node job whose node 1 is a peer process.
template <class Body>
void with_csp_peer(const char* transport, Body&& body,
                   std::chrono::milliseconds probe_every = csp::net::nameserver::probe_interval()) {
    static std::atomic<int> jobs{0};
    csp::net::nameserver ns({"127.0.0.1", 0}, probe_every);
    const std::string job = "bench-" + std::to_string(::getpid()) + "-" + std::to_string(jobs++);
    const pid_t pid = spawn_peer({"--peer", "csp"}, {"CSP_TRANSPORT=" + std::string(transport),
                                                     "CSP_NAMESERVER=" + ns.address().str(), "CSP_JOB=" + job,
                                                     "CSP_RANK=1", "CSP_SIZE=2", "CSP_TOKEN=bench"});
    csp::run([&] {
        csp::net::node_options o = csp::net::node_options::from_environment();  // CSP_WINDOW etc.
        o.transport = std::string(transport) == "ucx" ? csp::net::transport_kind::ucx : csp::net::transport_kind::tcp;
        o.job = job;
        o.rank = 0;
        o.size = 2;
        o.nameserver = ns.address();
        o.token = "bench";
        csp::net::node self(o);
        auto inbox = self.open(bench_port);
        body(self, inbox);
        self.send(1, bench_port, char{0}, tag_stop);
        self.close();
    });
    reap(pid);
}

void rtt_csp(benchmark::State& state, const char* transport, std::size_t bytes, const std::string& figure,
             std::chrono::milliseconds probe_every = csp::net::nameserver::probe_interval()) {
    with_csp_peer(transport, [&](csp::net::node& self, csp::net::port& inbox) {
        csp::net::payload p = csp::net::encode(std::vector<char>(bytes, 'x'));
        self.send(1, bench_port, p);
        (void)inbox.receive();  // the link is up
        const auto start = clock_type::now();
        for (auto _ : state) {
            self.send(1, bench_port, p);
            benchmark::DoNotOptimize(inbox.receive());
        }
        const double us = std::chrono::duration<double, std::micro>(clock_type::now() - start).count();
        state.counters["us_per_roundtrip"] = us / static_cast<double>(state.iterations());
        bench::record(figure, us / static_cast<double>(state.iterations()));
    }, probe_every);
}

// The sender's side of stream_1MiB/ucx_landed: the messages borrow one
// buffer (not copied, as MPI_Send's), each with a tag of its own.
void stream_landed(benchmark::State& state) {
    with_csp_peer("ucx", [&](csp::net::node& self, csp::net::port& inbox) {
        const std::vector<char> buffer(stream_message, 'x');
        csp::net::loans book;
        std::uint64_t next = 0;
        auto batch = [&] {
            (void)inbox.receive();  // the receiver expects the batch
            for (int i = 0; i < stream_batch; ++i, ++next)
                self.send(1, bench_port, book.lend(std::span<const char>(buffer)), landed_tag(next));
        };
        self.send(1, bench_port, char{0}, tag_landed_begin);
        batch();
        const auto start = clock_type::now();
        for (auto _ : state) batch();
        (void)inbox.receive();
        const double s = std::chrono::duration<double>(clock_type::now() - start).count();
        self.send(1, bench_port, char{0}, tag_landed_end);
        const auto not_landed = csp::net::decode<std::uint64_t>(inbox.receive().body);
        book.settle();
        const double mb = static_cast<double>(state.iterations()) * stream_batch * stream_message / 1e6;
        state.counters["MB_per_s"] = mb / s;
        state.counters["not_landed"] = static_cast<double>(not_landed);
        bench::record("stream/ucx_landed", mb / s);
    });
}

void stream_csp(benchmark::State& state, const char* transport) {
    with_csp_peer(transport, [&](csp::net::node& self, csp::net::port& inbox) {
        csp::net::payload p = csp::net::encode(std::vector<char>(stream_message, 'x'));
        for (int i = 0; i < stream_batch; ++i) self.send(1, bench_port, p, tag_stream);
        (void)inbox.receive();
        const auto start = clock_type::now();
        for (auto _ : state) {
            for (int i = 0; i < stream_batch; ++i) self.send(1, bench_port, p, tag_stream);
            (void)inbox.receive();
        }
        const double s = std::chrono::duration<double>(clock_type::now() - start).count();
        const double mb = static_cast<double>(state.iterations()) * stream_batch * stream_message / 1e6;
        state.counters["MB_per_s"] = mb / s;
        bench::record(std::string("stream/") + transport, mb / s);
    });
}

}  // namespace

int main(int argc, char** argv) {
    if (argc >= 3 && std::string(argv[1]) == "--peer") {
        const std::string mode = argv[2];
        if (mode == "csp") return peer_csp();
        if (argc == 5) return peer_raw(mode, std::stoi(argv[3]), std::stoul(argv[4]));
        return 2;
    }
    for (std::size_t bytes : {std::size_t{8}, std::size_t{1024}}) {
        const std::string n = bytes == 8 ? "rtt_8B" : "rtt_1KiB";
        benchmark::RegisterBenchmark((n + "/tcp").c_str(),
                                     [=](benchmark::State& s) { rtt_csp(s, "tcp", bytes, n + "/tcp"); })
            ->MinTime(0.5)
            ->UseRealTime();
#if CSP_BENCH_WITH_UCX
        benchmark::RegisterBenchmark((n + "/ucx").c_str(),
                                     [=](benchmark::State& s) { rtt_csp(s, "ucx", bytes, n + "/ucx"); })
            ->MinTime(0.5)
            ->UseRealTime();
#endif
        benchmark::RegisterBenchmark((n + "/raw_tcp_blocking").c_str(),
                                     [=](benchmark::State& s) { rtt_raw(s, bytes, false, n + "/raw_tcp_blocking"); })
            ->MinTime(0.5)->UseRealTime();
        benchmark::RegisterBenchmark((n + "/raw_tcp_polling").c_str(),
                                     [=](benchmark::State& s) { rtt_raw(s, bytes, true, n + "/raw_tcp_polling"); })
            ->MinTime(0.5)->UseRealTime();
        bench::register_ratio(n + "/ratio_vs_polling", n + "/tcp", n + "/raw_tcp_polling");
        bench::register_ratio(n + "/ratio_vs_blocking", n + "/tcp", n + "/raw_tcp_blocking");
    }
    using std::chrono::milliseconds;
    benchmark::RegisterBenchmark("deadlock_probes/rtt_8B_off", [](benchmark::State& s) {
        rtt_csp(s, "tcp", 8, "deadlock_probes/off", milliseconds(0));
    })->MinTime(1.0)->UseRealTime();
    benchmark::RegisterBenchmark("deadlock_probes/rtt_8B_every_10ms", [](benchmark::State& s) {
        rtt_csp(s, "tcp", 8, "deadlock_probes/every_10ms", milliseconds(10));
    })->MinTime(1.0)->UseRealTime();
    bench::register_ratio("deadlock_probes/ratio", "deadlock_probes/every_10ms", "deadlock_probes/off");
    benchmark::RegisterBenchmark("stream_1MiB/tcp", [](benchmark::State& s) { stream_csp(s, "tcp"); })
        ->MinTime(1.0)->UseRealTime();
#if CSP_BENCH_WITH_UCX
    benchmark::RegisterBenchmark("stream_1MiB/ucx", [](benchmark::State& s) { stream_csp(s, "ucx"); })
        ->MinTime(1.0)->UseRealTime();
    benchmark::RegisterBenchmark("stream_1MiB/ucx_landed", stream_landed)->MinTime(1.0)->UseRealTime();
#endif
    benchmark::RegisterBenchmark("stream_1MiB/raw_tcp", stream_raw)->MinTime(1.0)->UseRealTime();
    bench::register_ratio("stream_1MiB/ratio", "stream/tcp", "stream/raw_tcp");
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
}
