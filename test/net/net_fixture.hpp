#pragma once
// Several nodes in one test process: each node on its own thread with its own
// runtime, all registered with one in-process nameserver.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <exception>
#include <stdexcept>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "csp/runtime.hpp"
#include "net/net.hpp"

namespace net_test {

// A blocking TCP connection to an IPv4 address, made outside any runtime
// (a test's stranger or relay thread); -1 if it cannot be made.
inline int connect_plain(const csp::net::endpoint& to) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(to.port);
    ::inet_pton(AF_INET, to.host.c_str(), &a.sin_addr);
    if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    if (fd >= 0) ::close(fd);
    return -1;
}

inline csp::net::node_options options_for(const csp::net::nameserver& ns, const std::string& job, int rank, int size,
                                          const std::string& token = "secret") {
    csp::net::node_options o;
    o.job = job;
    o.rank = rank;
    o.size = size;
    o.nameserver = ns.address();
    o.token = token;
    return o;
}

// Runs body(node) as rank r of an n-node job for every r in `ranks` (run_nodes:
// all of them), each on its own thread and runtime; rethrows the first failure.
// `configure(rank, options)`, if given, changes a node's options first.
inline void run_ranks(const csp::net::nameserver& ns, const std::string& job, int n, const std::vector<int>& ranks,
                      const std::function<void(csp::net::node&)>& body, std::size_t threads = 1,
                      const std::function<void(int, csp::net::node_options&)>& configure = {}) {
    std::vector<std::thread> ts;
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
    for (int r : ranks)
        ts.emplace_back([&, r] {
            try {
                csp::run([&] {
                    auto options = options_for(ns, job, r, n);
                    if (configure) configure(r, options);
                    csp::net::node self(options);
                    body(self);
                }, {.threads = threads});
            } catch (...) {
                errors[static_cast<std::size_t>(r)] = std::current_exception();
            }
        });
    for (auto& t : ts) t.join();
    for (auto& e : errors)
        if (e) std::rethrow_exception(e);
}

inline void run_nodes(const csp::net::nameserver& ns, const std::string& job, int n,
                      const std::function<void(csp::net::node&)>& body, std::size_t threads = 1,
                      const std::function<void(int, csp::net::node_options&)>& configure = {}) {
    std::vector<int> all;
    for (int r = 0; r < n; ++r) all.push_back(r);
    run_ranks(ns, job, n, all, body, threads, configure);
}

// Starts `program args...` as rank `rank` of an n-node job in an OS process
// of its own, with the CSP_* variables a launcher would give it (and the
// rest of this process's environment). Its standard output goes to
// `stdout_to` unless that is -1. Returns its pid; throws if it cannot start.
inline pid_t spawn_node(const std::string& program, const std::vector<std::string>& args,
                        const csp::net::nameserver& ns, const std::string& job, int rank, int n,
                        const std::string& token = "secret", int stdout_to = -1) {
    std::vector<std::string> env = {"CSP_NAMESERVER=" + ns.address().str(), "CSP_JOB=" + job,
                                    "CSP_RANK=" + std::to_string(rank), "CSP_SIZE=" + std::to_string(n),
                                    "CSP_TOKEN=" + token};
    for (char** e = environ; *e; ++e)
        if (std::strncmp(*e, "CSP_", 4) != 0) env.emplace_back(*e);
    std::vector<char*> envp, argv{const_cast<char*>(program.c_str())};
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (stdout_to >= 0) posix_spawn_file_actions_adddup2(&actions, stdout_to, 1);
    pid_t pid;
    const int rc = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("cannot start " + program + ": " + std::strerror(rc));
    return pid;
}

// spawn_node for a peer mode that prints "ready" once registered (and
// listening): returns its pid after that line, so a test may kill it
// knowing its loss cannot pass for a slow start.
inline pid_t spawn_ready_node(const std::string& program, const std::vector<std::string>& args,
                              const csp::net::nameserver& ns, const std::string& job, int rank, int n) {
    int out[2];
    if (::pipe(out) != 0) throw std::runtime_error("pipe");
    const pid_t pid = spawn_node(program, args, ns, job, rank, n, "secret", out[1]);
    ::close(out[1]);
    char ready[6] = {};
    (void)!::read(out[0], ready, 6);  // "ready\n"
    ::close(out[0]);
    return pid;
}

// Expects the next receive on `p` to throw a peer_error for `peer` whose
// message contains `text`.
inline void expect_peer_error(const csp::net::port& p, int peer, const std::string& text) {
    try {
        p.receive();
        ADD_FAILURE() << "a message came where a peer_error for node " << peer << " was expected";
    } catch (const csp::net::peer_error& e) {
        EXPECT_EQ(e.peer(), peer);
        EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
}

// Whether one of the faults `n` keeps mentions `text`.
inline bool has_fault(const csp::net::node& n, const std::string& text) {
    for (const auto& f : n.faults())
        if (f.find(text) != std::string::npos) return true;
    return false;
}

// Collects log lines while it lives.
class captured_log {
public:
    captured_log() {
        previous_ = csp::net::set_log_sink([this](const std::string& line) {
            std::lock_guard lk(lock_);
            lines_.push_back(line);
        });
    }
    ~captured_log() { csp::net::set_log_sink(previous_); }
    std::vector<std::string> lines() const {
        std::lock_guard lk(lock_);
        return lines_;
    }
    bool contains(const std::string& text) const {
        for (const auto& l : lines())
            if (l.find(text) != std::string::npos) return true;
        return false;
    }

private:
    mutable std::mutex lock_;
    std::vector<std::string> lines_;
    csp::net::log_sink previous_;
};

}  // namespace net_test
