#pragma once
// Sends from the sender's own memory, and the wait until it may change.
//
//   csp::net::loans book;
//   self.send(down, port, book.lend(std::span<const double>(last_row)), tag);   // not copied
//   ...                                   // last_row must neither change nor go
//   book.settle();                        // until every transport is done with it
//
// A lent value is sent as the span it lends (received as a std::vector<E>,
// like any span), but its message borrows the elements where they are
// instead of copying them into a payload of its own: TCP writes them to the
// socket from there, UCX reads them in place (by CMA between processes of
// one host), and a receiver in the same process (a hybrid job's fiber rank)
// reads them from the sender's memory.
//
// settle() blocks the calling process until no message holds any element
// lent through this book since the last settle: each was written to its
// connection, taken by UCX, dropped with a link that failed (link.hpp), or,
// delivered inside this process, received and dropped by its receiver. So
// settling before one's own receive of a lent message (a send to oneself, or
// to a fiber that waits for this one) waits forever: copy those instead. A
// send that throws (a lost peer, a usage error) leaves nothing borrowed.
//
// A book is one process's: lend, send what it lent and settle from one
// process at a time (borrowing is not thread-safe). The lent value holds
// nothing itself (lent.hpp); only messages do. The destructor settles, so
// the elements outlive every message borrowing them even when an algorithm
// leaves by an exception.
//
// Why a latch and not a counter someone polls: the last message may be
// dropped on any thread (a TCP writer, UCX's progress, a receiver in
// another runtime), and the settling process should sleep, visible to the
// deadlock report, not spin. `held` counts the book's own hold (1) plus
// one per message alive; whoever takes it to 0 writes the one token the
// settling process reads, and only a settle that found messages alive reads
// it, so the token is never left behind for the next round.
#include <atomic>
#include <cstddef>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "csp/channel.hpp"
#include "net/lent.hpp"

namespace csp::net {

class loans final : public lender {
public:
    loans() = default;
    loans(const loans&) = delete;
    loans& operator=(const loans&) = delete;
    // Moving takes the messages out on loan along (the one moved from has
    // none); values lent before the move refer to the old book: lend again.
    loans(loans&& o) noexcept : state_(std::move(o.state_)), lent_(std::exchange(o.lent_, 0)) {}
    loans& operator=(loans&& o) {
        if (this != &o) {
            settle();
            state_ = std::move(o.state_);
            lent_ = std::exchange(o.lent_, 0);
        }
        return *this;
    }
    ~loans() { settle(); }

    // The elements of `v`, to be sent from where they are: each send of the
    // result borrows them for its message.
    template <class E>
        requires std::is_trivially_copyable_v<E> && (!std::is_pointer_v<E>) && (!std::is_same_v<E, bool>)
    lent<E> lend(std::span<const E> v) {
        return lent<E>(v, *this);
    }
    template <class E>
    lent<E> lend(std::span<E> v) {
        return lend(std::span<const E>(v));
    }

    // Blocks until every message that borrowed through this book since the
    // last settle is dropped.
    void settle() {
        if (!state_ || state_->held.load(std::memory_order_acquire) == 1) return;
        if (state_->held.fetch_sub(1, std::memory_order_acq_rel) != 1) state_->back.reader().read();
        state_->held.store(1, std::memory_order_relaxed);
    }

    // Messages that borrowed through this book so far (all rounds).
    std::size_t lent_count() const noexcept { return lent_; }

    payload borrow(const void* data, std::size_t n) override {
        if (!state_) state_ = std::make_shared<state>();
        state_->held.fetch_add(1, std::memory_order_relaxed);
        ++lent_;
        return payload::adopt(std::make_shared<borrowed>(state_), data, n);
    }

private:
    struct state {
        std::atomic<long> held{1};
        csp::channel<char> back{"lent messages still held by a transport or a receiver", csp::buffer::fifo(1)};
    };
    // The owner of a message's borrowed bytes: dropping the last copy of
    // the message drops it. It keeps the state alive past the write.
    struct borrowed {
        std::shared_ptr<state> s;
        explicit borrowed(std::shared_ptr<state> st) : s(std::move(st)) {}
        borrowed(const borrowed&) = delete;
        borrowed& operator=(const borrowed&) = delete;
        ~borrowed() {
            if (s->held.fetch_sub(1, std::memory_order_acq_rel) == 1) s->back.writer().write(0);
        }
    };

    std::shared_ptr<state> state_;
    std::size_t lent_ = 0;
};

}  // namespace csp::net
