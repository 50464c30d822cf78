#pragma once
// A process group: processes started one at a time while something runs (a
// server's process per connection, a service's own process), joined together.
// par() needs its branches up front; this is its dynamic counterpart.
//
//   csp::process_group clients;
//   clients.spawn(csp::proc("client", [fd] { serve(fd); }));
//   clients.spawn(csp::proc("switch", [] { route(); }), csp::process_kind::daemon);
//   clients.wait();                                  // also done by the destructor
//
// A member's exception is dropped: a member reports its failures itself.
//
// Daemons. A daemon process waits for requests by design, so it neither
// counts for nor appears in a deadlock report, and is not aborted when one is
// found; when only daemons are left blocked the runtime is not deadlocked.
// A daemon that may be woken from outside the runtime (a file descriptor it
// watches) keeps the runtime awake like any other process. A daemon belongs
// to the runtime, not to the process that started it: it has no parent in
// the par tree, so it may outlive its starter. Name it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <source_location>
#include <utility>

#include "csp/process.hpp"

namespace csp {

enum class process_kind : std::uint8_t { program, daemon };

class process_group {
public:
    process_group() = default;
    process_group(const process_group&) = delete;
    process_group& operator=(const process_group&) = delete;
    ~process_group() { wait(); }

    // Starts `f` (a callable, or csp::proc(name, callable)) as a process of
    // the calling process's runtime. Must be called from a process; the
    // group may be waited for from anywhere.
    template <class F>
    void spawn(F&& f, process_kind kind = process_kind::program,
               std::source_location at = std::source_location::current()) {
        detail::process_record* self = detail::calling_process("csp::process_group::spawn");
        const bool daemon = kind == process_kind::daemon;
        const detail::family kin{self->runtime(), daemon ? nullptr : self, at, daemon};
        detail::join_state* j;
        {
            std::lock_guard lk(lock_);
            reap();
            j = joins_.emplace_back(std::make_unique<detail::join_state>(1, kin)).get();
        }
        try {
            detail::spawn(j, 0, std::forward<F>(f), &none_);
        } catch (...) {
            j->abandon_unstarted();  // wait() must not wait for it
            throw;
        }
    }

    // Waits for every member started so far, and any started meanwhile.
    void wait() {
        for (;;) {
            std::unique_ptr<detail::join_state> j;
            {
                std::lock_guard lk(lock_);
                if (joins_.empty()) return;
                j = std::move(joins_.front());
                joins_.pop_front();
            }
            j->wait();
        }
    }

    // Members started and not yet known to have finished (finished ones are
    // forgotten as the group grows).
    std::size_t unjoined() {
        std::lock_guard lk(lock_);
        return joins_.size();
    }

private:
    // A server that starts a process per connection must not keep a record
    // per finished one: finished members are forgotten whenever the list has
    // doubled since the last look, so the list stays within twice the
    // members running and each spawn costs O(1) amortised.
    void reap() {
        if (joins_.size() < reap_at_) return;
        joins_.remove_if([](const std::unique_ptr<detail::join_state>& j) { return j->finished(); });
        reap_at_ = std::max<std::size_t>(16, 2 * joins_.size());
    }

    std::mutex lock_;
    std::size_t reap_at_ = 16;
    std::list<std::unique_ptr<detail::join_state>> joins_;
    detail::result_slot<void> none_;
};

}  // namespace csp
