// Servers that run out of file descriptors keep serving. The test lowers
// this process's descriptor limit (setrlimit is per process, and ctest runs
// each test in a process of its own), and a child process with a normal
// limit opens idle connections to the server, as any user of the machine
// could.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "descriptor_limit.hpp"
#include "net_fixture.hpp"

using namespace std::chrono_literals;

namespace {

int open_descriptors() {
    int n = 0;
    DIR* d = ::opendir("/proc/self/fd");
    while (::readdir(d)) ++n;
    ::closedir(d);
    return n - 3;  // ".", ".." and the directory itself
}

// Lowers the soft descriptor limit to `headroom` more than are open now;
// restores it when it ends.
class descriptor_limit {
public:
    explicit descriptor_limit(int headroom) {
        ::getrlimit(RLIMIT_NOFILE, &saved_);
        rlimit low = saved_;
        low.rlim_cur = static_cast<rlim_t>(open_descriptors() + headroom);
        ::setrlimit(RLIMIT_NOFILE, &low);
    }
    ~descriptor_limit() { restore(); }
    void restore() { ::setrlimit(RLIMIT_NOFILE, &saved_); }

private:
    rlimit saved_{};
};

// A child process holding `n` idle connections to `at` until release().
class flood {
public:
    flood(const csp::net::endpoint& at, int n) {
        int ready[2], hold[2];
        if (::pipe(ready) != 0 || ::pipe(hold) != 0) throw std::runtime_error("pipe");
        pid_ = ::fork();
        if (pid_ == 0) {
            ::close(ready[0]);
            ::close(hold[1]);  // else the child would hold its own release open
            rlimit high{};
            ::getrlimit(RLIMIT_NOFILE, &high);
            high.rlim_cur = high.rlim_max;
            ::setrlimit(RLIMIT_NOFILE, &high);
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_port = htons(at.port);
            ::inet_pton(AF_INET, at.host.c_str(), &a.sin_addr);
            for (int i = 0; i < n; ++i) {
                const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
                ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);  // in progress; never used
            }
            char c = 1;
            (void)!::write(ready[1], &c, 1);
            (void)!::read(hold[0], &c, 1);
            ::_exit(0);
        }
        ::close(ready[1]);
        ::close(hold[0]);
        char c;
        (void)!::read(ready[0], &c, 1);
        ::close(ready[0]);
        release_ = hold[1];
    }
    ~flood() { release(); }
    void release() {
        if (release_ < 0) return;
        ::close(release_);  // the child reads end of file and exits, closing its connections
        release_ = -1;
        ::waitpid(pid_, nullptr, 0);
    }

private:
    pid_t pid_ = -1;
    int release_ = -1;
};

template <class Pred>
bool eventually(Pred p, std::chrono::milliseconds within = 10s) {
    const auto end = std::chrono::steady_clock::now() + within;
    while (!p()) {
        if (std::chrono::steady_clock::now() > end) return false;
        std::this_thread::sleep_for(5ms);
    }
    return true;
}

using net_test::has_fault;

// Regression: the listener stopped for good at the first EMFILE, so no peer
// could connect to the node again.
TEST(net_exhaustion, a_listener_out_of_descriptors_sheds_strangers_and_keeps_accepting) {
    SKIP_AT_THE_DESCRIPTOR_LIMIT_UNDER_SANITIZERS();
    csp::net::nameserver ns;
    net_test::captured_log log;
    std::atomic<bool> flooded{false};
    std::atomic<const csp::net::node*> node0{nullptr};
    std::promise<csp::net::endpoint> at;
    auto node0_at = at.get_future();
    std::thread driver;
    net_test::run_nodes(ns, "exhausted", 2, [&](csp::net::node& self) {
        auto inbox = self.open(1);
        if (self.rank() == 0) {
            node0 = &self;
            at.set_value(self.address());
            EXPECT_EQ(inbox.receive<int>(), 7);  // from node 1, over a connection made after the flood
            EXPECT_TRUE(flooded.load());
            // Node 1 may have left already: count links made, not links up.
            EXPECT_EQ(self.stats().accepted + self.stats().connected, 1u);
            return;
        }
        // Node 1 first waits, in a plain thread, for node 0 to run out of
        // descriptors under a flood, then sends its first message.
        std::thread t([&] {
            const auto to = node0_at.get();
            {
                descriptor_limit limit(40);
                flood strangers(to, 300);
                EXPECT_TRUE(eventually([&] { return has_fault(*node0.load(), "dropping the oldest unauthenticated"); }))
                    << testing::PrintToString(node0.load()->faults());
                EXPECT_TRUE(eventually([&] { return has_fault(*node0.load(), "accepting again"); }))
                    << testing::PrintToString(node0.load()->faults());
                strangers.release();
            }
            flooded = true;
        });
        t.join();
        self.send(0, 1, 7);
    });
}

// Regression: the nameserver stopped accepting at the first EMFILE and later
// exited, so no node could register or look up any more.
TEST(net_exhaustion, a_nameserver_out_of_descriptors_keeps_serving) {
    SKIP_AT_THE_DESCRIPTOR_LIMIT_UNDER_SANITIZERS();
    csp::net::nameserver ns;
    net_test::captured_log log;
    {
        descriptor_limit limit(30);
        flood strangers(ns.address(), 300);
        EXPECT_TRUE(eventually([&] { return log.contains("dropping the oldest unauthenticated"); }))
            << testing::PrintToString(log.lines());
        EXPECT_TRUE(eventually([&] { return log.contains("accepting again"); })) << testing::PrintToString(log.lines());
        strangers.release();
    }
    // Each node runs on a thread of its own: the sum is atomic (a plain int
    // lost one of the two additions when they came at the same moment).
    std::atomic<int> total{0};
    net_test::run_nodes(ns, "after-exhaustion", 2, [&](csp::net::node& self) {
        auto inbox = self.open(1);
        self.send(1 - self.rank(), 1, self.rank() + 1);
        total += inbox.receive<int>();
    });
    EXPECT_EQ(total.load(), 3);
}

// Regression: a LOOKUP kept its connection, and so its descriptor, until its
// wait ended, even after the client had hung up.
TEST(net_exhaustion, a_lookup_whose_client_hung_up_releases_its_descriptor_at_once) {
    csp::net::nameserver ns;
    std::this_thread::sleep_for(50ms);
    const int before = open_descriptors();
    {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(ns.address().port);
        ::inet_pton(AF_INET, ns.address().host.c_str(), &a.sin_addr);
        ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
        const std::string line = "LOOKUP nobody 0 600000\n";
        ASSERT_EQ(::write(fd, line.data(), line.size()), static_cast<ssize_t>(line.size()));
        EXPECT_TRUE(eventually([&] { return open_descriptors() == before + 2; }, 2s));  // ours and the server's
        ::close(fd);
    }
    EXPECT_TRUE(eventually([&] { return open_descriptors() == before; }, 3s))
        << open_descriptors() << " descriptors open, " << before << " before the lookup";
}

}  // namespace
