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
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/context_pool.hpp"
#include "collectives/dispatch.hpp"
#include "collectives/tag.hpp"

namespace csp::collectives {

inline constexpr int undefined = -1;  // a split colour: this rank joins no group

template <class C>
class group;
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
          context_(std::exchange(o.context_, -1)), counter_(std::move(o.counter_)) {}
    group& operator=(group&& o) noexcept {
        if (this != &o) {
            release();
            parent_ = o.parent_;
            members_ = std::move(o.members_);
            index_ = std::move(o.index_);
            rank_ = o.rank_;
            context_ = std::exchange(o.context_, -1);
            counter_ = std::move(o.counter_);
        }
        return *this;
    }
    group(const group&) = delete;
    group& operator=(const group&) = delete;
    ~group() { release(); }

    int rank() const noexcept { return rank_; }
    int size() const noexcept { return static_cast<int>(members_.size()); }

    template <class T>
    void send(int to, tag t, T value) {
        detail::check_rank(to, size(), "send to");
        parent_->send(member(to), t, std::move(value));
    }
    template <class T>
    T receive(int from, tag t) {
        detail::check_rank(from, size(), "receive from");
        return parent_->template receive<T>(member(from), t);
    }
    // Only members send with this group's tags, so any sender is one.
    template <class T>
    received<T> receive_any(tag t) {
        auto m = parent_->template receive_any<T>(t);
        return {index_[static_cast<std::size_t>(m.source)], std::move(m.value)};
    }
    tag next_tag(stream s = {}) { return tag(context_pool::stream_of(context_, s), counter_->next(s).sequence()); }
    context_pool& contexts() { return parent_->contexts(); }

    // The parent, and the parent rank of each member (in group rank order).
    C& parent() const noexcept { return *parent_; }
    int member(int r) const { return members_[static_cast<std::size_t>(r)]; }
    const std::vector<int>& members() const noexcept { return members_; }
    int context() const noexcept { return context_; }

private:
    template <class P>
    friend std::optional<group<P>> split(P& parent, int color, int key, stream s);

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
