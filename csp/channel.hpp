#pragma once
// Channels and their ends.
//
//   csp::channel<int> c{"numbers"};                  // rendezvous, any-to-any
//   csp::channel<job> q{"jobs", csp::buffer::fifo(16), csp::sharing::one_to_any};
//   csp::reader<int> in = c.reader();                // what a consumer takes
//   csp::writer<int> out = c.writer();               // what a producer takes
//
// A channel is a handle to shared state: copies refer to the same channel.
// Ends are what processes receive as parameters; an end says what its holder
// may do. Each call of reader() or writer() makes a new holder of that side;
// copies of an end are the same holder, with one exception: par_for copies its
// body into each branch, and every end that copy holds is a holder of its own
// (so a farm written `par_for(n, [out = c.writer()](std::size_t) { ...;
// out.retire(); })` retires the side only when the last branch has). When the
// holders of a side have all retired or gone, and at least one retired, the
// side is retired and the other side's operations throw retired_error (once
// buffered values have been read). poison() on any end or on the channel ends
// it for everyone at once.
//
// An end made outside any runtime (say, on the main thread, for a
// std::thread) tells the deadlock detector that a thread may still act on the
// channel, so processes waiting on it are not reported; until the runtime
// takes it: once the end is moved or copied into a process, or used by one, it
// is the program's, and a deadlock on its channel is reported. Ends made by
// processes of two runtimes (a channel handed from one csp::run to another on
// another thread) make it a channel between them, as ends taken into two do.
#include <atomic>
#include <memory>
#include <source_location>
#include <string>
#include <type_traits>
#include <utility>

#include "csp/buffer.hpp"
#include "csp/detail/channel_core.hpp"
#include "csp/detail/process_record.hpp"

namespace csp {

template <class T> class channel;
template <class T> class input_guard;
template <class T> class output_guard;

namespace detail {

// One holder of one side of a channel (PyCSP's "joined" end). Every call of
// channel::reader() or writer() makes a holder; copies of an end share it
// (except for par_for's branches, see above).
//
// `outside_` is true while the holder counts toward the channel's
// outside_holders(): it was made by a thread outside any runtime, and no
// process has moved, copied or used it yet. It only ever goes from true to
// false (adopt), and the channel's count follows it exactly once.
template <side S>
class holder {
public:
    explicit holder(std::shared_ptr<channel_base> core)
        : core_(std::move(core)), outside_(current_process() == nullptr && ends_entering_process == 0) {
        core_->enroll(S);
        if (outside_.load(std::memory_order_relaxed)) core_->outside_holder_added();
        else if (const process_record* p = current_process()) core_->end_made_in(p->runtime());
    }
    ~holder() {
        if (outside_.load(std::memory_order_relaxed)) core_->outside_holder_removed();
        if (!retired_.load(std::memory_order_relaxed)) core_->leave(S, false);
    }
    holder(const holder&) = delete;
    holder& operator=(const holder&) = delete;

    void retire() {
        if (!retired_.exchange(true)) core_->leave(S, true);
    }
    bool retired() const noexcept { return retired_.load(std::memory_order_relaxed); }

    // Called whenever an end of this holder is moved, copied or used: once
    // that happens in a process, or while spawn() moves it into one, the
    // runtime has it and no outside thread is presumed to act through it.
    void touched() noexcept {
        if (outside_.load(std::memory_order_relaxed)) [[unlikely]] {
            if ((current_process() != nullptr || ends_entering_process != 0) && outside_.exchange(false)) {
                // In this order: a detector that sees the outside holder gone
                // also sees the channel between runtimes, if it now is one.
                core_->taken_into_this_runtime();
                core_->outside_holder_removed();
            }
        }
    }

    // A holder for a copy of an end: a new one while par_for copies a body
    // for a branch (unless this one has retired: a copy of a retired end is
    // retired too), otherwise this one.
    static std::shared_ptr<holder> for_copy(const std::shared_ptr<holder>& h) {
        if (!h) return h;
        h->touched();
        if (ends_for_new_branch != 0 && !h->retired()) return std::make_shared<holder>(h->core_);
        return h;
    }

private:
    std::shared_ptr<channel_base> core_;
    std::atomic<bool> outside_;
    std::atomic<bool> retired_{false};
};

// What reader<T> and writer<T> share: a channel and the holder they act for.
template <class T, side S>
class channel_end {
public:
    channel_end() = default;
    channel_end(const channel_end& o) : core_(o.core_), holder_(holder<S>::for_copy(o.holder_)) {}
    channel_end(channel_end&& o) noexcept : core_(std::exchange(o.core_, nullptr)), holder_(std::move(o.holder_)) {
        if (holder_) holder_->touched();
    }
    channel_end& operator=(const channel_end& o) {
        if (this != &o) {
            holder_ = holder<S>::for_copy(o.holder_);
            core_ = o.core_;
        }
        return *this;
    }
    channel_end& operator=(channel_end&& o) noexcept {
        if (this != &o) {
            holder_ = std::move(o.holder_);
            core_ = std::exchange(o.core_, nullptr);
            if (holder_) holder_->touched();
        }
        return *this;
    }

    // Poison the whole channel: every waiter wakes and every later operation
    // on either side throws poisoned_error.
    void poison() const { checked().poison(); }

    // This holder is done with its side (PyCSP's retire); applies to every
    // copy of this end that shares its holder. Idempotent.
    void retire() const {
        if (holder_) {
            holder_->touched();
            holder_->retire();
        }
    }

    bool valid() const noexcept { return core_ != nullptr; }
    std::string label() const { return core_ ? core_->label() : "an empty channel end"; }

protected:
    explicit channel_end(std::shared_ptr<channel_core<T>> core)
        : core_(core.get()), holder_(std::make_shared<holder<S>>(std::move(core))) {}

    // The throws live out of line: this runs on every operation, inside
    // every process's stack, and building their messages in its frame made
    // every blocked process deeper (runtime_options::stack_size).
    channel_core<T>& checked() const {
        if (!core_) [[unlikely]] throw_empty();
        holder_->touched();
        if (holder_->retired()) [[unlikely]] throw_retired();
        return *core_;
    }
    [[noreturn, gnu::noinline, gnu::cold]] static void throw_empty() {
        throw usage_error("operation on an empty channel end (default-constructed or moved-from)");
    }
    [[noreturn, gnu::noinline, gnu::cold]] void throw_retired() const {
        throw retired_error("this " + std::string(S == reading ? "reader" : "writer") + " of " +
                            core_->label() + " has retired");
    }

private:
    channel_core<T>* core_ = nullptr;   // kept alive by holder_
    std::shared_ptr<holder<S>> holder_;

    friend class input_guard<T>;
    friend class output_guard<T>;
};

// What a channel's constructor takes as an option: anything but the channel
// itself (a copy) or a source location (which comes last); apply() says which
// options are allowed.
template <class O, class Channel>
concept channel_option =
    !std::is_same_v<std::decay_t<O>, Channel> && !std::is_same_v<std::decay_t<O>, std::source_location>;

}  // namespace detail

template <class T>
class reader : public detail::channel_end<T, detail::reading> {
    using base = detail::channel_end<T, detail::reading>;

public:
    reader() = default;

    // Blocks until a writer's value is available, and takes it.
    T read() const { return this->checked().read(); }
    T operator()() const { return read(); }

private:
    using base::base;
    friend class channel<T>;
};

template <class T>
class writer : public detail::channel_end<T, detail::writing> {
    using base = detail::channel_end<T, detail::writing>;

public:
    writer() = default;

    // Blocks until a reader has taken v (rendezvous) or v is buffered.
    void write(T v) const { this->checked().write(std::move(v)); }
    void operator()(T v) const { write(std::move(v)); }

private:
    using base::base;
    friend class channel<T>;
};

template <class T>
class channel {
public:
    // Options in any order: a name (anything a std::string is made from), a
    // csp::buffer, a csp::sharing. An unnamed channel is labelled with where
    // it was made ("channel#3 (made at farm.cpp:40)"); one overload per number
    // of options, since the source location has to be the last parameter.
    explicit channel(std::source_location at = std::source_location::current()) { make(at); }
    template <class A>
        requires(detail::channel_option<A, channel>)
    explicit channel(A&& a, std::source_location at = std::source_location::current()) {
        make(at, std::forward<A>(a));
    }
    template <class A, class B>
        requires(detail::channel_option<A, channel> && detail::channel_option<B, channel>)
    channel(A&& a, B&& b, std::source_location at = std::source_location::current()) {
        make(at, std::forward<A>(a), std::forward<B>(b));
    }
    template <class A, class B, class C>
        requires(detail::channel_option<A, channel> && detail::channel_option<B, channel> &&
                 detail::channel_option<C, channel>)
    channel(A&& a, B&& b, C&& c, std::source_location at = std::source_location::current()) {
        make(at, std::forward<A>(a), std::forward<B>(b), std::forward<C>(c));
    }

    csp::reader<T> reader() const { return csp::reader<T>(core_); }
    csp::writer<T> writer() const { return csp::writer<T>(core_); }

    void poison() const { core_->poison(); }
    bool poisoned() const { return core_->poisoned(); }
    const std::string& name() const noexcept { return core_->name(); }
    std::string label() const { return core_->label(); }
    // Values currently held in the buffer (always 0 for a rendezvous).
    std::size_t buffered() const { return core_->buffered(); }

private:
    template <class... Option>
    void make(std::source_location at, Option&&... options) {
        std::string name;
        buffer buf = buffer::none();
        sharing share = sharing::any_to_any;
        (apply(std::forward<Option>(options), name, buf, share), ...);
        core_ = std::make_shared<detail::channel_core<T>>(std::move(name), buf, share, at);
    }

    template <class O>
    static void apply(O&& o, std::string& name, buffer& buf, sharing& share) {
        using D = std::decay_t<O>;
        if constexpr (std::is_same_v<D, buffer>) buf = o;
        else if constexpr (std::is_same_v<D, sharing>) share = o;
        else if constexpr (std::is_constructible_v<std::string, O&&>) name = std::string(std::forward<O>(o));
        else static_assert(sizeof(D) == 0, "channel options: a name, a csp::buffer or a csp::sharing");
    }

    std::shared_ptr<detail::channel_core<T>> core_;
};

}  // namespace csp
