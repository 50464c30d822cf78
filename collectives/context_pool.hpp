#pragma once
// Context ids: what keeps the tags of one sub-group (group.hpp) apart from
// every other group's and from its parent's.
//
// Each rank of a root communicator (local_communicator, net_communicator)
// owns one pool, shared by every group made from it at that rank. A group's
// calls use stream ids in [group_streams, group_streams + capacity * 256):
// context c, user stream s (s < 256) is stream group_streams + 256 c + s.
// The root's own streams stay below group_streams (tag.hpp).
//
// Invariant: two groups that share a member never hold the same context at
// the same time. A split (group.hpp) agrees on the lowest context that is
// free at every rank of the group being split (the OR of their pools'
// bitmaps, MPI's method), and every group member marks it taken until its
// group is gone. Groups of one split with different colours share the
// context: they have no member in common. Splits at one rank must run one at
// a time (like MPI's); two at once would pick the same context, so the pool
// refuses the second with a usage_error instead.
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <mutex>
#include <string>

#include "collectives/tag.hpp"
#include "csp/error.hpp"

namespace csp::collectives {

class context_pool {
public:
    static constexpr int capacity = 1024;
    static constexpr std::uint32_t streams_per_context = 256;
    static constexpr std::uint32_t group_streams = stream::limit;
    using bitmap = std::array<std::uint64_t, capacity / 64>;

    static_assert(group_streams + capacity * streams_per_context <= (std::uint64_t{1} << (64 - tag::stream_shift)),
                  "group streams must fit a tag's stream bits");

    context_pool() = default;
    context_pool(const context_pool&) = delete;
    context_pool& operator=(const context_pool&) = delete;

    // The stream id of user stream `s` of the group holding context `c`.
    static std::uint32_t stream_of(int c, stream s) {
        if (s.id >= streams_per_context)
            throw usage_error("a group's stream id must be below " + std::to_string(streams_per_context) + ", not " +
                              std::to_string(s.id));
        return group_streams + static_cast<std::uint32_t>(c) * streams_per_context + s.id;
    }

    // Held for the whole of one split at this rank.
    class split_scope {
    public:
        explicit split_scope(context_pool& p) : pool_(&p) {
            if (p.splitting_.exchange(true))
                throw usage_error("two splits at once at one rank: make a rank's splits one after another");
        }
        ~split_scope() { pool_->splitting_.store(false); }
        split_scope(const split_scope&) = delete;
        split_scope& operator=(const split_scope&) = delete;

    private:
        context_pool* pool_;
    };

    bitmap taken() const {
        std::lock_guard lk(lock_);
        return taken_;
    }

    // The lowest context free in `used` (the OR over a group's members).
    static int lowest_free(const bitmap& used) {
        for (std::size_t w = 0; w < used.size(); ++w)
            if (~used[w] != 0) return static_cast<int>(w * 64 + std::countr_one(used[w]));
        throw usage_error("all " + std::to_string(capacity) +
                          " group contexts are in use at some rank: destroy groups that are no longer needed");
    }

    void take(int c) {
        std::lock_guard lk(lock_);
        taken_[static_cast<std::size_t>(c) / 64] |= std::uint64_t{1} << (c % 64);
    }
    void release(int c) {
        std::lock_guard lk(lock_);
        taken_[static_cast<std::size_t>(c) / 64] &= ~(std::uint64_t{1} << (c % 64));
    }

private:
    mutable std::mutex lock_;
    bitmap taken_{};
    std::atomic<bool> splitting_{false};
};

}  // namespace csp::collectives
