#pragma once
// What a process blocked inside a library call waits for, in deadlock
// reports, beyond the channel it reads: a mailbox's reply channel is
// anonymous (naming one per receive would cost an allocation), but the
// receive knows its source and tag.
//
//   csp::wait_note note(+[](const void* ctx, std::string& out) { ... }, &state);
//   reply.read();        // a report reads "... (waiting for <what ctx says>)"
//
// The note lives on the caller's stack for the wait; notes nest (the inner
// one shows). Two pointer stores each way: nothing is formatted unless a
// report is written, while no process runs.
#include <string>

#include "csp/detail/process_record.hpp"

namespace csp {

class wait_note {
public:
    using describe_fn = void (*)(const void* ctx, std::string& out);

    wait_note(describe_fn f, const void* ctx) noexcept : fn_(f), ctx_(ctx), self_(detail::current_process()) {
        if (self_) {
            outer_ = self_->note;
            self_->note = this;
        }
    }
    ~wait_note() {
        if (self_) self_->note = outer_;
    }
    wait_note(const wait_note&) = delete;
    wait_note& operator=(const wait_note&) = delete;

    void describe(std::string& out) const { fn_(ctx_, out); }

private:
    describe_fn fn_;
    const void* ctx_;
    detail::process_record* self_;
    const wait_note* outer_ = nullptr;
};

}  // namespace csp
