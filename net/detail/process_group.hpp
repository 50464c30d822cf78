#pragma once
// Processes started one by one while a server runs (a link's processes, one
// per client connection), all waited for before the server's state goes.
// par() needs its branches up front; this is the dynamic counterpart.
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "csp/process.hpp"

namespace csp::net::detail {

class process_group {
public:
    process_group() = default;
    process_group(const process_group&) = delete;
    process_group& operator=(const process_group&) = delete;
    ~process_group() { wait(); }

    // Starts f as a process of the calling process's runtime. f must not throw
    // (what it throws is dropped).
    template <class F>
    void spawn(std::string name, F&& f) {
        auto* self = csp::detail::calling_process("process_group::spawn");
        csp::detail::join_state* j;
        {
            std::lock_guard lk(lock_);
            j = joins_.emplace_back(std::make_unique<csp::detail::join_state>(1)).get();
        }
        csp::detail::spawn(self->runtime(), self, 0, csp::proc(std::move(name), std::forward<F>(f)), &none_, j);
    }

    // Waits for every process started so far, and any started meanwhile.
    void wait() {
        for (;;) {
            std::unique_ptr<csp::detail::join_state> j;
            {
                std::lock_guard lk(lock_);
                if (joins_.empty()) return;
                j = std::move(joins_.front());
                joins_.pop_front();
            }
            j->wait();
        }
    }

private:
    std::mutex lock_;
    std::list<std::unique_ptr<csp::detail::join_state>> joins_;
    csp::detail::result_slot<void> none_;
};

}  // namespace csp::net::detail
