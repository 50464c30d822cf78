#pragma once
// Ranks as processes of one runtime.
//
//   auto sums = csp::collectives::run_local(8, [](csp::collectives::local_communicator& c) {
//       return csp::collectives::allreduce(c, double(c.rank()), csp::collectives::sum{});
//   });
//
// A local_group holds one mailbox per rank; values travel as std::any, moved,
// never serialised (so any copyable T will do). Under a model recorder the
// messages are recorded rank to rank (collectives/record_local.hpp). When one
// rank's process throws, run_local fails every mailbox with that error, so
// the other ranks' receives throw instead of waiting forever, and then
// rethrows it.
#include <any>
#include <atomic>
#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/context_pool.hpp"
#include "collectives/mailbox.hpp"
#include "collectives/shared_board.hpp"
#include "collectives/tag.hpp"
#include "csp/model/recorder.hpp"
#include "csp/process.hpp"
#include "csp/type_name.hpp"
#include "csp/view.hpp"

namespace csp::collectives {

// A revocation, sent as a revocation_notice (revocation.hpp).
template <>
struct revocation_body<std::any> {
    static detail::revocation_notice notice(const std::any& body) {
        const auto* n = std::any_cast<detail::revocation_notice>(&body);
        return n ? *n : revocation_without_text();
    }
};

class local_group {
public:
    explicit local_group(int size);
    ~local_group();
    local_group(const local_group&) = delete;
    local_group& operator=(const local_group&) = delete;

    int size() const noexcept { return static_cast<int>(boxes_.size()); }
    mailbox<std::any>& box(int rank) { return boxes_[static_cast<std::size_t>(rank)]; }
    tag_counter& counter(int rank) { return counters_[static_cast<std::size_t>(rank)]; }
    context_pool& contexts(int rank) { return contexts_[static_cast<std::size_t>(rank)]; }

    // One rank failed with `error`: every receive and every shared-board
    // meeting in the group, now and later, throws it.
    void fail(std::exception_ptr error);

    // Called once every rank has returned. A message still waiting came for
    // a call its rank did not make, or for one whose ranks named different
    // roots (each group of agreeing ranks completed alone, with its own
    // answer), or is a send no receive matched: usage_error naming it (the
    // messages of a call that failed at every rank are expected, and left
    // out: mailbox::unclaimed_report).
    void check_every_message_taken() const;

    // The shared board of stream `id` (shared_board.hpp), made on first use.
    // A board lives as long as the group, so the default stream's, asked
    // for on every collective call, is found with one load once made.
    shared_board& board(std::uint32_t id) {
        if (id == 0)
            if (shared_board* b = default_board_.load(std::memory_order_acquire)) return *b;
        return make_board(id);
    }

private:
    shared_board& make_board(std::uint32_t id);

    std::deque<mailbox<std::any>> boxes_;
    std::deque<tag_counter> counters_;
    std::deque<context_pool> contexts_;
    std::mutex boards_lock_;  // boards_ and failed_
    std::unordered_map<std::uint32_t, std::unique_ptr<shared_board>> boards_;
    std::atomic<shared_board*> default_board_{nullptr};  // boards_[0], once made
    std::exception_ptr failed_;
};

class local_communicator {
public:
    local_communicator(local_group& g, int rank) : group_(&g), rank_(rank) {
        detail::check_rank(rank, g.size(), "local_communicator:");
    }

    int rank() const noexcept { return rank_; }
    int size() const noexcept { return group_->size(); }
    // Ranks are processes of one runtime: a message is a channel write, which
    // no poll of the IO scheduler needs to take in.
    static constexpr bool receives_through_io() noexcept { return false; }

    template <class T>
    void send(int to, tag t, T value) const {
        detail::check_rank(to, size(), "send to");
        group_->box(rank_).refuse_revoked_send(t.bits());
        model::recorder* rec = model::recorder::active();
        {
            model::recorder::quiet_scope hide(rec);
            // A view is delivered as the data it views, as over the network
            // (csp/view.hpp): the sender may reuse its buffer once send returns.
            group_->box(to).deliver(rank_, t.bits(), std::any(csp::owned(std::move(value))));
        }
        if (rec) rec->message(model::direction::send, rank_, to, model_id(t));
    }
    template <class T>
    T receive(int from, tag t) const {
        detail::check_rank(from, size(), "receive from");
        return unbox<T>(take(from, t).body);
    }
    template <class T>
    received<T> receive_any(tag t) const {
        auto m = take(any_source, t);
        return {m.source, unbox<T>(std::move(m.body))};
    }
    tag next_tag(stream s = {}) const { return group_->counter(rank_).next(s); }
    tag upcoming_tag(stream s = {}) const { return group_->counter(rank_).upcoming(s); }
    // This rank is done with the call of tag t: its messages here and to
    // come are dropped (mailbox::forget).
    void forget(tag t) const { group_->box(rank_).forget(t); }
    // Where the ranks meet without messages (shared_board.hpp). None under
    // a model recorder, which sees only messages: the shared-memory
    // algorithms then run their message-passing fallback.
    shared_board* board(stream s) const { return shares_memory() ? &group_->board(s.id) : nullptr; }
    bool shares_memory() const { return model::recorder::active() == nullptr; }
    // This rank's group contexts (context_pool.hpp, group.hpp).
    context_pool& contexts() const { return group_->contexts(rank_); }

private:
    static model::message_id model_id(tag t) noexcept { return {t.stream_id(), t.sequence(), t.phase()}; }

    // Under a recorder (csp/model/recorder.hpp) a message is recorded rank to
    // rank, and the mailbox channels that carry it stay out of the model.
    mailbox<std::any>::envelope take(int from, tag t) const;

    template <class T>
    static T unbox(std::any&& a) {
        csp::check_receivable<T>();
        if (auto* p = std::any_cast<T>(&a)) return std::move(*p);
        throw usage_error("a collective received a value of type " + csp::type_name(a.type()) + " where it expected " +
                          csp::type_name<T>() + "; do all ranks pass the same type?");
    }

    local_group* group_;
    int rank_;
};

// Runs body(comm) as every rank of an n-rank local group, each rank its own
// process ("rank 0", "rank 1", ...), and returns the ranks' results in rank
// order (nothing if body returns void). Call it from a process. Once every
// rank has returned, a message that no call took is a usage_error naming it
// (local_group::check_every_message_taken): some rank's answer may be wrong.
template <class F>
auto run_local(int n, F&& body) {
    local_group group(n);
    auto rank = [&](std::size_t r) {
        csp::this_process::set_name("rank " + std::to_string(r));
        local_communicator comm(group, static_cast<int>(r));
        try {
            return body(comm);
        } catch (...) {
            group.fail(std::current_exception());
            throw;
        }
    };
    if constexpr (std::is_void_v<std::invoke_result_t<decltype(rank)&, std::size_t>>) {
        csp::par_for(static_cast<std::size_t>(n), rank);
        group.check_every_message_taken();
    } else {
        auto results = csp::par_for(static_cast<std::size_t>(n), rank);
        group.check_every_message_taken();
        return results;
    }
}

}  // namespace csp::collectives
