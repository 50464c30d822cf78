#pragma once
// Several nodes in one test process: each node on its own thread with its own
// runtime, all registered with one in-process nameserver.
#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "csp/runtime.hpp"
#include "net/net.hpp"

namespace net_test {

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
inline void run_ranks(const csp::net::nameserver& ns, const std::string& job, int n, const std::vector<int>& ranks,
                      const std::function<void(csp::net::node&)>& body, std::size_t threads = 1) {
    std::vector<std::thread> ts;
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
    for (int r : ranks)
        ts.emplace_back([&, r] {
            try {
                csp::run([&] {
                    csp::net::node self(options_for(ns, job, r, n));
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
                      const std::function<void(csp::net::node&)>& body, std::size_t threads = 1) {
    std::vector<int> all;
    for (int r = 0; r < n; ++r) all.push_back(r);
    run_ranks(ns, job, n, all, body, threads);
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
