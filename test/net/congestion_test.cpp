// The TCP congestion control of links within one host (node_options::
// local_congestion): every link socket of two nodes of this host takes it,
// reno by default, "" keeps the system's, and one the kernel refuses is
// named at once.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test/net/net_fixture.hpp"

using net_test::run_nodes;

namespace {

std::string first_line(const char* path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

std::vector<std::string> words(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

std::uint16_t port_of(const sockaddr_storage& a) {
    if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
    if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
    return 0;
}

// The congestion control of every connected TCP socket of this process with
// one end on a port of `listeners` (the nodes' link connections, both the
// connecting and the accepting side), and of the listeners themselves.
struct congestion_seen {
    std::vector<std::string> links, listeners;
};
congestion_seen link_congestion(const std::set<std::uint16_t>& listeners) {
    congestion_seen out;
    DIR* d = ::opendir("/proc/self/fd");
    if (d == nullptr) return out;
    while (dirent* e = ::readdir(d)) {
        const int fd = std::atoi(e->d_name);
        struct stat st{};
        if (e->d_name[0] == '.' || ::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
        sockaddr_storage ours{}, theirs{};
        socklen_t a = sizeof ours, b = sizeof theirs;
        if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ours), &a) != 0) continue;
        int listening = 0;
        socklen_t l = sizeof listening;
        ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &l);
        const bool connected = ::getpeername(fd, reinterpret_cast<sockaddr*>(&theirs), &b) == 0;
        if (!(listening && listeners.count(port_of(ours))) &&
            !(connected && (listeners.count(port_of(ours)) || listeners.count(port_of(theirs)))))
            continue;
        char name[16] = {};  // the kernel's TCP_CA_NAME_MAX
        socklen_t len = sizeof name;
        if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) == 0)
            (listening ? out.listeners : out.links).emplace_back(name);
    }
    ::closedir(d);
    return out;
}

// Two nodes exchange a message each way (so their link is up), then rank 0
// reads the congestion control of the link's sockets while both still live.
congestion_seen congestion_of_a_link(const std::string& job, const std::optional<std::string>& local_congestion) {
    csp::net::nameserver ns;
    congestion_seen seen;
    run_nodes(
        ns, job, 2,
        [&](csp::net::node& self) {
            auto inbox = self.open(3);
            const int port = self.address().port;
            if (self.rank() == 1) {
                self.send(0, 3, port);
                inbox.receive<int>();  // rank 0 has looked
            } else {
                const int other = inbox.receive<int>();
                seen = link_congestion({static_cast<std::uint16_t>(port), static_cast<std::uint16_t>(other)});
                self.send(1, 3, 0);
            }
        },
        1, [&](int, csp::net::node_options& o) { o.local_congestion = local_congestion; });
    return seen;
}

}  // namespace

// A congestion control the kernel has and this process may choose, other
// than the system's default (so that a test sees the option work), or "".
static std::string other_than_the_systems() {
    const std::string system = first_line("/proc/sys/net/ipv4/tcp_congestion_control");
    for (const auto& a : words(first_line(::geteuid() == 0 ? "/proc/sys/net/ipv4/tcp_available_congestion_control"
                                                           : "/proc/sys/net/ipv4/tcp_allowed_congestion_control")))
        if (a != system) return a;
    return "";
}

TEST(net_congestion, links_between_nodes_of_one_host_take_the_local_congestion_control) {
    const std::string want = other_than_the_systems();
    if (want.empty()) GTEST_SKIP() << "this kernel offers no congestion control but the system's";
    const auto seen = congestion_of_a_link("congestion-local", want);
    ASSERT_GE(seen.links.size(), 2u) << "both ends of the link are sockets of this process";
    for (const auto& s : seen.links) EXPECT_EQ(s, want);
}

// Regression: the congestion control was switched after a connection was
// set up, and a connection switched away from BBR keeps BBR's pacing (an
// 8-rank 1 MiB allreduce 3.5-3.7 ms against 2.5-2.7 with reno from the
// start). Accepted connections inherit their listener's, so the listeners
// must have it already.
TEST(net_congestion, link_connections_start_under_the_local_congestion_control_not_switched_later) {
    const std::string want = other_than_the_systems();
    if (want.empty()) GTEST_SKIP() << "this kernel offers no congestion control but the system's";
    const auto seen = congestion_of_a_link("congestion-start", want);
    ASSERT_EQ(seen.listeners.size(), 2u) << "each node's listener";
    for (const auto& s : seen.listeners) EXPECT_EQ(s, want);
}

TEST(net_congestion, by_default_links_within_a_host_use_reno_where_the_kernel_allows_it) {
    const std::string system = first_line("/proc/sys/net/ipv4/tcp_congestion_control");
    const auto allowed = words(first_line("/proc/sys/net/ipv4/tcp_allowed_congestion_control"));
    const bool may_choose_reno =
        ::geteuid() == 0 || std::find(allowed.begin(), allowed.end(), "reno") != allowed.end();
    const auto seen = congestion_of_a_link("congestion-default", std::nullopt);
    ASSERT_GE(seen.links.size(), 2u);
    for (const auto& s : seen.links) EXPECT_EQ(s, may_choose_reno ? "reno" : system);
}

TEST(net_congestion, an_empty_local_congestion_keeps_the_systems) {
    const std::string system = first_line("/proc/sys/net/ipv4/tcp_congestion_control");
    const auto seen = congestion_of_a_link("congestion-system", "");
    ASSERT_GE(seen.links.size(), 2u);
    for (const auto& s : seen.links) EXPECT_EQ(s, system);
    for (const auto& s : seen.listeners) EXPECT_EQ(s, system);
}

TEST(net_congestion, one_the_kernel_refuses_is_a_usage_error_naming_it_and_what_the_kernel_has) {
    try {
        csp::run([] {
            csp::net::node_options o;
            o.local_congestion = "no_such_algorithm";
            csp::net::node n(o);
        });
        ADD_FAILURE() << "a node was made with a congestion control the kernel does not have";
    } catch (const csp::usage_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("'no_such_algorithm'"), std::string::npos) << what;
        EXPECT_NE(what.find("CSP_TCP_LOCAL_CONGESTION"), std::string::npos) << what;
        EXPECT_NE(what.find("this kernel has " + first_line("/proc/sys/net/ipv4/tcp_available_congestion_control")),
                  std::string::npos)
            << what;
    }
}

TEST(net_congestion, the_variable_names_an_algorithm_or_the_system_default) {
    ::setenv("CSP_TCP_LOCAL_CONGESTION", "cubic", 1);
    EXPECT_EQ(csp::net::node_options::from_environment().local_congestion, "cubic");
    ::setenv("CSP_TCP_LOCAL_CONGESTION", "system", 1);
    EXPECT_EQ(csp::net::node_options::from_environment().local_congestion, "");
    ::unsetenv("CSP_TCP_LOCAL_CONGESTION");
    EXPECT_EQ(csp::net::node_options::from_environment().local_congestion, std::nullopt);
}
