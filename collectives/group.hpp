#pragma once
// Sub-groups of a communicator: MPI's split.
//
//   auto row = cc::split(comm, /*color=*/me / 4, /*key=*/me);  // std::optional<group<C>>
//   double s = cc::allreduce(*row, x, cc::sum{});                 // among the row only
//
// split is a collective call of the whole parent: every rank passes a
// colour and a key; the ranks with one colour form one group, ordered by
// key, ties by parent rank. A rank that passes `undefined` joins no group
// and gets nothing. A group is a communicator (communicator.hpp) in its own
// right: every collective and algorithm runs on it unchanged, it may be
// split again, and its calls never meet the parent's or another group's
// (each group holds a context id, context_pool.hpp; its streams are the ids
// 0..255).
//
// A group refers to its parent, which must outlive it; its messages travel
// through the parent (and so through the parent's transport). A rank may
// hold many groups; splits at one rank run one after another.
//
// Shared memory: a group of a net_communicator whose ranks share a host
// (every group of a job that fits on one host, and a group marked
// on_one_host(), as a hierarchy's host groups are) has host boards of its
// own (host_boards.hpp): the table then picks the host_memory algorithms
// for it, as for a whole job on one host.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/context_pool.hpp"
#include "collectives/dispatch.hpp"
#include "collectives/host_boards.hpp"
#include "collectives/tag.hpp"

namespace csp::collectives {

inline constexpr int undefined = -1;  // a split colour: this rank joins no group

template <class C>
class group;
template <class C>
class hierarchy;

namespace detail {
// A communicator whose groups can meet in shared memory (net_communicator,
// and groups of it).
template <class C>
concept has_host_boards = requires(C& c, const C& cc, stream s, tag t, const std::string& line) {
    c.board_on_host(s, t);
    cc.host_links_share_memory();
    cc.host_oversubscribed();
    cc.log_line(line);
};
}  // namespace detail

// The group of the ranks that passed `color`, ordered by (key, parent rank);
// nothing for `undefined`. Collective over `parent`, in stream `s` of the
// parent. A colour below `undefined` is a usage_error on every rank.
template <class C>
std::optional<group<C>> split(C& parent, int color, int key = 0, stream s = {});

template <class C>
class group {
public:
    group(group&& o) noexcept
        : parent_(o.parent_), members_(std::move(o.members_)), index_(std::move(o.index_)), rank_(o.rank_),
          context_(std::exchange(o.context_, -1)), counter_(std::move(o.counter_)), one_host_(o.one_host_),
          boards_(std::move(o.boards_)) {}
    group& operator=(group&& o) noexcept {
        if (this != &o) {
            release();
            parent_ = o.parent_;
            members_ = std::move(o.members_);
            index_ = std::move(o.index_);
            rank_ = o.rank_;
            context_ = std::exchange(o.context_, -1);
            counter_ = std::move(o.counter_);
            one_host_ = o.one_host_;
            boards_ = std::move(o.boards_);
        }
        return *this;
    }
    group(const group&) = delete;
    group& operator=(const group&) = delete;
    ~group() { release(); }

    int rank() const noexcept { return rank_; }
    int size() const noexcept { return static_cast<int>(members_.size()); }

    template <class T>
    void send(int to, tag t, T&& value) {
        detail::check_rank(to, size(), "send to");
        parent_->send(member(to), t, std::forward<T>(value));
    }
    template <class T>
    void send_notice(int to, tag t, T&& value)
        requires requires(C& c, T&& v) { c.send_notice(0, t, std::forward<T>(v)); }
    {
        detail::check_rank(to, size(), "send to");
        parent_->send_notice(member(to), t, std::forward<T>(value));
    }
    template <class T>
    T receive(int from, tag t) {
        detail::check_rank(from, size(), "receive from");
        return parent_->template receive<T>(member(from), t);
    }
    // Only members send with this group's tags, so any sender is one; and
    // only a member's failure fails the receive, where the parent can tell
    // (receive_any_of): the group goes on while its members do.
    template <class T>
    received<T> receive_any(tag t) {
        auto m = [&] {
            if constexpr (requires { parent_->template receive_any_of<T>(t, std::span<const int>{}); })
                return parent_->template receive_any_of<T>(t, members_);
            else return parent_->template receive_any<T>(t);
        }();
        return {index_[static_cast<std::size_t>(m.source)], std::move(m.value)};
    }
    // receive_any from the group ranks `among` only (a group of a group).
    template <class T>
    received<T> receive_any_of(tag t, std::span<const int> among)
        requires requires(C& c) { c.template receive_any_of<T>(t, std::span<const int>{}); }
    {
        std::vector<int> in_parent;
        in_parent.reserve(among.size());
        for (const int r : among) in_parent.push_back(member(r));
        auto m = parent_->template receive_any_of<T>(t, in_parent);
        return {index_[static_cast<std::size_t>(m.source)], std::move(m.value)};
    }
    tag next_tag(stream s = {}) { return tag(context_pool::stream_of(context_, s), counter_->next(s).sequence()); }
    tag upcoming_tag(stream s = {}) {
        return tag(context_pool::stream_of(context_, s), counter_->upcoming(s).sequence());
    }
    // A group's tags are its parent's (their stream carries the context).
    void forget(tag t)
        requires requires(C& c, tag x) { c.forget(x); }
    {
        parent_->forget(t);
    }
    context_pool& contexts() { return parent_->contexts(); }

    // The parent, and the parent rank of each member (in group rank order).
    C& parent() const noexcept { return *parent_; }
    int member(int r) const { return members_[static_cast<std::size_t>(r)]; }
    const std::vector<int>& members() const noexcept { return members_; }
    int context() const noexcept { return context_; }

    // Every member runs on this host (the caller knows: a hierarchy's host
    // groups); every member marks it alike, before the group's first
    // collective. Where the parent's links to ranks of its host go through
    // shared memory, the group's collectives then meet in it.
    void on_one_host() noexcept { one_host_ = true; }

    // Shared memory (see the header comment), for a parent that has it. The
    // same answer at every member: the parent's is, and on_one_host is
    // marked alike.
    csp::collectives::link_level link_level() const
        requires detail::has_host_boards<C>
    {
        const bool shared = size() > 1 && (detail::link_level_of(*parent_) == link_level::host ||
                                           (one_host_ && parent_->host_links_share_memory()));
        return shared ? link_level::host : link_level::network;
    }
    bool host_links_share_memory() const
        requires detail::has_host_boards<C>
    {
        return parent_->host_links_share_memory();
    }
    bool host_oversubscribed() const
        requires detail::has_host_boards<C>
    {
        return parent_->host_oversubscribed();
    }
    // The parent's job (selection.hpp): the same at every member.
    bool job_oversubscribed() const
        requires requires(const C& c) { c.job_oversubscribed(); }
    {
        return parent_->job_oversubscribed();
    }
    void log_line(const std::string& line) const
        requires detail::has_host_boards<C>
    {
        parent_->log_line("a group of " + std::to_string(size()) + " ranks: " + line);
    }
    // The group's host boards (net_communicator::board_on_host).
    host_board* board_on_host(stream s, tag t)
        requires detail::has_host_boards<C>
    {
        return boards_->small(*this, s, t);
    }
    host_board* large_board_on_host(stream s, tag t)
        requires detail::has_host_boards<C>
    {
        return boards_->large(*this, s, t);
    }

private:
    template <class P>
    friend std::optional<group<P>> split(P& parent, int color, int key, stream s);
    friend class hierarchy<C>;  // its groups of a layout every rank knows

    group(C& parent, std::vector<int> members, int context)
        : parent_(&parent), members_(std::move(members)),
          index_(static_cast<std::size_t>(parent.size()), -1), context_(context),
          counter_(std::make_unique<tag_counter>()) {
        for (std::size_t i = 0; i < members_.size(); ++i) {
            index_[static_cast<std::size_t>(members_[i])] = static_cast<int>(i);
            if (members_[i] == parent.rank()) rank_ = static_cast<int>(i);
        }
        parent_->contexts().take(context_);
    }

    void release() noexcept {
        if (context_ >= 0) parent_->contexts().release(context_);
        context_ = -1;
    }

    C* parent_;
    std::vector<int> members_;  // group rank -> parent rank
    std::vector<int> index_;    // parent rank -> group rank, -1 for non-members
    int rank_ = -1;
    int context_ = -1;  // -1: moved from
    std::unique_ptr<tag_counter> counter_;
    bool one_host_ = false;
    std::unique_ptr<host_boards> boards_ = std::make_unique<host_boards>();  // null: moved from
};

namespace detail {
// What each rank tells the others in a split.
struct split_request {
    int color;
    int key;
    context_pool::bitmap taken;
};
}  // namespace detail

template <class C>
std::optional<group<C>> split(C& parent, int color, int key, stream s) {
    context_pool::split_scope one_at_a_time(parent.contexts());
    const auto all = allgather(parent, detail::split_request{color, key, parent.contexts().taken()}, s);
    context_pool::bitmap used{};
    for (std::size_t r = 0; r < all.size(); ++r) {
        if (all[r].color < undefined)
            throw usage_error("split: rank " + std::to_string(r) + " passed colour " + std::to_string(all[r].color) +
                              " (a colour is >= 0, or undefined)");
        for (std::size_t w = 0; w < used.size(); ++w) used[w] |= all[r].taken[w];
    }
    const int context = context_pool::lowest_free(used);
    if (color == undefined) return std::nullopt;
    std::vector<int> members;
    for (std::size_t r = 0; r < all.size(); ++r)
        if (all[r].color == color) members.push_back(static_cast<int>(r));
    std::stable_sort(members.begin(), members.end(), [&](int a, int b) {
        return all[static_cast<std::size_t>(a)].key < all[static_cast<std::size_t>(b)].key;
    });
    return group<C>(parent, std::move(members), context);
}

}  // namespace csp::collectives
