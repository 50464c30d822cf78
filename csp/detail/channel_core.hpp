#pragma once
// The state machine behind every channel, whatever its buffer.
//
// Invariants (all under lock_)
//  - If some reader node is waiting, the buffer is empty; if some writer node
//    is waiting, the buffer is full (rendezvous: always "full").
//  - A value leaves a writer only when that writer's node commits (or the
//    writer itself completes in one step); an alternation's output guard that
//    did not commit still owns its value.
//  - Once poisoned, the queues are empty, the buffer is dropped and every
//    operation throws. Retirement of one side releases the other side's
//    waiters; readers still drain what is buffered before they see it.
// Lock order: a channel lock is never held while another channel's lock is
// taken; alternation enables and disables its guards one at a time.
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "csp/buffer.hpp"
#include "csp/error.hpp"
#include "csp/observer.hpp"
#include "csp/waiter.hpp"
#include "csp/spinlock.hpp"
#include "csp/detail/source_place.hpp"
#include "csp/detail/thread_census.hpp"
#include "csp/detail/turn.hpp"
#include "csp/detail/wait_queue.hpp"

namespace csp::detail {

enum side : int { reading = 0, writing = 1 };

class channel_base {
public:
    channel_base(std::string name, buffer buf, sharing share, std::source_location made_at = {})
        : name_(std::move(name)), buf_(buf), share_(share), id_(next_id()), made_at_(made_at) {}
    channel_base(const channel_base&) = delete;
    channel_base& operator=(const channel_base&) = delete;

    // "channel 'results'", or for an unnamed channel its number and where the
    // program made it: "channel#12 (made at farm.cpp:40)".
    // (The error paths below are compiled once, in channel_base.cpp.)
    std::string label() const;
    // Where the channel was made (line 0 if unknown).
    const std::source_location& made_at() const noexcept { return made_at_; }
    const std::string& name() const noexcept { return name_; }
    std::uint64_t id() const noexcept { return id_; }
    const buffer& buffering() const noexcept { return buf_; }

    void enroll(side s) {
        std::lock_guard lk(lock_);
        ++ends_[s];
    }

    // An end of side `s` goes away; `retiring` says whether it retired.
    void leave(side s, bool retiring) {
        std::lock_guard lk(lock_);
        --ends_[s];
        any_retired_[s] = any_retired_[s] || retiring;
        if (ends_[s] == 0 && any_retired_[s] && !retired_[s]) {
            retired_[s] = true;
            (s == writing ? readers_ : writers_).release_all(wait_node::outcome::retired);
        }
    }

    bool poisoned() const {
        std::lock_guard lk(lock_);
        return poisoned_;
    }

protected:
    static std::uint64_t next_id() {
        static std::atomic<std::uint64_t> counter{0};
        return counter.fetch_add(1, std::memory_order_relaxed) + 1;
    }

    [[noreturn]] void throw_poisoned() const;
    retired_error retired_error_for(side s) const;
    [[noreturn]] void throw_retired(side s) const;

    // Side `s` was declared single and a process other than `self` waits on it.
    bool single_side_busy(side s, const waiter* self) const {
        const bool single = s == reading
                                ? (share_ == sharing::one_to_one || share_ == sharing::any_to_one)
                                : (share_ == sharing::one_to_one || share_ == sharing::one_to_any);
        return single && (s == reading ? readers_ : writers_).has_waiting_other(self);
    }
    usage_error single_side_error(side s) const;
    void check_single(side s, const waiter* self) const {
        if (single_side_busy(s, self)) throw single_side_error(s);
    }

    // An operation on side `s` may not wait: is there a reason? (lock_ held)
    bool must_refuse(side s, const waiter* self) const {
        return poisoned_ || retired_[s == reading ? writing : reading] || single_side_busy(s, self);
    }
    // Throws the reason must_refuse() found, releasing lock_ first.
    [[noreturn]] void refuse_and_unlock(side s);

public:
    // One side of this channel as a wait_site (for plain reads and writes,
    // and for the guards in alt.hpp).
    class site final : public wait_site {
    public:
        site(const channel_base* ch, side s) : ch_(ch), side_(s) {}
        void describe(std::string& out) const override;
        bool reachable_from_outside() const override;

    private:
        const channel_base* ch_;
        side side_;
    };

    // Ends made by threads outside any runtime that no process has taken yet
    // (channel.hpp). A process waiting on such a channel may be woken by a
    // thread outside the runtimes, if there is one (thread_census.hpp), so it
    // is not reported as deadlocked.
    //
    // Such ends taken by processes of two runtimes (two csp::run on two
    // threads, sharing a channel made in main) make the channel one between
    // runtimes: while more than one runtime runs, a process of one may be
    // woken by a process of the other, which the first one's detector cannot
    // see, so it is not reported either (a report missed, never a false one).
    void outside_holder_added() noexcept { outside_holders_.fetch_add(1, std::memory_order_relaxed); }
    // Release and acquire: a take records its runtime (taken_into_this_runtime)
    // before it removes the outside holder, so a detector that sees the
    // holder gone sees the record too (reachable_from_outside reads the count
    // first); otherwise it could see neither while a take is half done.
    void outside_holder_removed() noexcept { outside_holders_.fetch_sub(1, std::memory_order_release); }
    int outside_holders() const noexcept { return outside_holders_.load(std::memory_order_acquire); }
    // An outside end was taken by a process of the calling thread's runtime
    // (channel_base.cpp; cold: once per such end).
    void taken_into_this_runtime() noexcept;
    // A process of `rt` made an end: the first runtime to do so is recorded,
    // and a second one makes the channel one between runtimes. Costs a
    // relaxed load when `rt` is the one recorded.
    void end_made_in(const void* rt) noexcept {
        const void* first = first_runtime_.load(std::memory_order_relaxed);
        if (first != rt) [[unlikely]] note_runtime(rt);
    }
    bool reachable_from_outside() const noexcept {
        // An end not taken yet may be used by an outside thread, or be about
        // to enter another running runtime. The count is read first: one
        // taken already left the record of its runtime (see above).
        if (outside_holders() > 0) return thread_census::others_may_act();
        return between_runtimes_.load(std::memory_order_relaxed) && thread_census::runtimes_running() > 1;
    }

protected:
    void note_runtime(const void* rt) noexcept;  // channel_base.cpp

    std::atomic<int> outside_holders_{0};
    std::atomic<const void*> first_runtime_{nullptr};  // the first runtime that made or took an end
    std::atomic<bool> between_runtimes_{false};

    // After a partner committed our node: throw unless the operation happened.
    void finish(const wait_node& n, side s) const {
        switch (n.result) {
            case wait_node::outcome::done: return;
            case wait_node::outcome::poisoned: throw_poisoned();
            case wait_node::outcome::retired: throw_retired(s);
            case wait_node::outcome::pending: break;
        }
        throw error(label() + ": woken without an outcome (internal error)");
    }


    mutable spinlock lock_;
    wait_queue readers_;
    wait_queue writers_;
    bool poisoned_ = false;
    int ends_[2] = {0, 0};
    bool any_retired_[2] = {false, false};
    bool retired_[2] = {false, false};

private:
    std::string name_;
    buffer buf_;
    sharing share_;
    std::uint64_t id_;
    std::source_location made_at_;
};

template <class T>
class channel_core final : public channel_base {
public:
    using channel_base::channel_base;

    T read() {
        std::optional<T> out;
        lock_.lock();
        if (take_locked(out)) {
            lock_.unlock();
            notify(event::kind::channel_read, this);
            count_turn_op();  // turn.hpp: a read that never waits still ends its turn
            return std::move(*out);
        }
        waiter w;
        wait_node n{&w, 0, &out};
        if (must_refuse(reading, &w)) refuse_and_unlock(reading);
        const site here(this, reading);
        w.set_site(&here);
        readers_.push_back(n);
        lock_.unlock();
        if (w.wait() == waiter::aborted) unregister_aborted(n, w, readers_);
        finish(n, reading);
        notify(event::kind::channel_read, this);
        return std::move(*out);
    }

    void write(T&& v) {
        lock_.lock();
        if (poisoned_ || retired_[reading]) refuse_and_unlock(writing);
        if (give_locked(v)) {
            lock_.unlock();
            notify(event::kind::channel_write, this);
            return;
        }
        waiter w;
        wait_node n{&w, 0, &v};
        if (must_refuse(writing, &w)) refuse_and_unlock(writing);
        const site here(this, writing);
        w.set_site(&here);
        writers_.push_back(n);
        lock_.unlock();
        if (w.wait() == waiter::aborted) unregister_aborted(n, w, writers_);
        finish(n, writing);
        notify(event::kind::channel_write, this);
    }

    // ---- guard support (alt.hpp) -------------------------------------------

    bool try_read(std::optional<T>& out) {
        std::lock_guard lk(lock_);
        if (take_locked(out)) return true;
        if (poisoned_) throw_poisoned();
        if (retired_[writing]) throw_retired(reading);
        return false;
    }

    // Moves from v only when it returns true.
    bool try_write(T& v) {
        std::lock_guard lk(lock_);
        if (poisoned_) throw_poisoned();
        if (retired_[reading]) throw_retired(writing);
        return give_locked(v);
    }

    // Registers n (slot: std::optional<T>*); true if a read could complete now.
    bool enable_read(wait_node& n) {
        std::lock_guard lk(lock_);
        if (poisoned_ || retired_[writing] || !buf_.empty() || writers_.has_waiting_other(n.owner))
            return true;
        check_single(reading, n.owner);
        readers_.push_back(n);
        return false;
    }

    // Registers n (slot: T*); true if a write could complete now.
    bool enable_write(wait_node& n) {
        std::lock_guard lk(lock_);
        if (poisoned_ || retired_[reading] || has_room_locked() || readers_.has_waiting_other(n.owner))
            return true;
        check_single(writing, n.owner);
        writers_.push_back(n);
        return false;
    }

    void disable(side s, wait_node& n) {
        std::lock_guard lk(lock_);
        (s == reading ? readers_ : writers_).erase(n);
    }

    void complete(side s, const wait_node& n) const { finish(n, s); }

    void poison() {
        std::lock_guard lk(lock_);
        if (poisoned_) return;
        poisoned_ = true;
        buf_.clear();
        readers_.release_all(wait_node::outcome::poisoned);
        writers_.release_all(wait_node::outcome::poisoned);
    }

    std::size_t buffered() const {
        std::lock_guard lk(lock_);
        return buf_.size();
    }


private:
    bool has_room_locked() const {
        switch (buffering().how) {
            case buffer::kind::none: return false;
            case buffer::kind::fifo: return buf_.size() < buffering().capacity;
            case buffer::kind::unbounded:
            case buffer::kind::overwriting: return true;
        }
        return false;
    }

    // Hand v to a waiting reader, or buffer it. Moves from v only on success.
    bool give_locked(T& v) {
        if (wait_node* r = readers_.pop_committed()) {
            static_cast<std::optional<T>*>(r->slot)->emplace(std::move(v));
            r->result = wait_node::outcome::done;
            r->owner->wake();
            return true;
        }
        if (!has_room_locked()) return false;
        if (buffering().how == buffer::kind::overwriting && buf_.size() == buffering().capacity)
            buf_.pop_front();
        buf_.push_back(std::move(v));
        return true;
    }

    // Take the oldest value: from the buffer (refilling it from a waiting
    // writer) or straight from a waiting writer.
    bool take_locked(std::optional<T>& out) {
        if (!buf_.empty()) {
            out.emplace(std::move(buf_.front()));
            buf_.pop_front();
            if (wait_node* w = writers_.pop_committed()) {
                buf_.push_back(std::move(*static_cast<T*>(w->slot)));
                w->result = wait_node::outcome::done;
                w->owner->wake();
            }
            return true;
        }
        if (wait_node* w = writers_.pop_committed()) {
            out.emplace(std::move(*static_cast<T*>(w->slot)));
            w->result = wait_node::outcome::done;
            w->owner->wake();
            return true;
        }
        return false;
    }

    void unregister_aborted(wait_node& n, const waiter& w, wait_queue& q) {
        {
            std::lock_guard lk(lock_);
            q.erase(n);
        }
        w.throw_aborted();
    }

    std::deque<T> buf_;
};

}  // namespace csp::detail
