#pragma once
// One rank's shared reduction variables and their fused force points.
//
//   cc::shared_group g(comm);               // this rank's; any communicator
//   cc::shared<double> s1(g), s2(g);        // shared.hpp
//   ... s1 += x; s2 += x * x; ...           // deferred: no message
//   double mean = s1 / n;                   // force point: one allreduce
//                                           // resolves s1 and s2 together
//
// A group collects the rank's pending contributions (one slot per variable
// with an update pending) and resolves all of them at the next force point in
// one allreduce of one fused block (detail/fused_block.hpp): one algorithm
// run, one message per hop, whatever the number of variables and ops. A
// variable's value is then its base folded with the reduction of its slot.
//
// The SPMD rule: every rank reaches each force point with the same pending
// updates (the same variables, ops and vector lengths) and the same value
// in each of those variables (each slot carries a print of it). The slots
// are packed in variable-id order, so processes of one rank may update in
// any interleaving; a rank whose set differs from a peer's gets a
// usage_error naming both sets, at every rank, never a wrong value. Which
// updates a force point takes is the rank's own affair, though: a read
// racing another process's update of the same group resolves whatever was
// made before it, so such reads must follow the updates in the same way at
// every rank (a par's join, a channel). A rank with nothing
// pending does not communicate at a force point; with
// shared_options::check_every_force (CSP_SHARED_CHECK=1) it does, so a rank
// that skipped an update its peers made is reported too.
//
// Processes: the variables of a group may be used by several processes of
// its rank. Updates are folded under the group's lock; one force point runs
// at a time per group (a token), and a process that touches a variable
// whose slot is being reduced waits for that reduction. A failed reduction
// (a lost peer, a mismatch) fails the group: every later force point and
// every read of a variable that was pending rethrows that error.
//
// Streams: a group runs its reductions in one stream of its communicator
// (stream 0 by default); groups used at the same time need different ones.
#include <algorithm>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/detail/fused_block.hpp"
#include "collectives/dispatch.hpp"
#include "csp/channel.hpp"
#include "csp/process.hpp"
#include "csp/runtime_lock.hpp"

namespace csp::collectives {

struct shared_options {
    // Reduce at every force point, even with nothing pending (one empty
    // block): slower, but a rank that skipped an update is reported instead
    // of its peers waiting for it.
    bool check_every_force = false;

    // CSP_SHARED_CHECK=1 sets check_every_force.
    static shared_options from_environment();
};

// What a group did, for tests and the fusion benchmark.
struct shared_statistics {
    std::uint64_t updates = 0;        // contributions made (x += a is one)
    std::uint64_t reductions = 0;     // fused allreduces run
    std::uint64_t slots_reduced = 0;  // variable slots those carried
};

class shared_group;

namespace detail {

// A variable as its group sees it. Every member is read and written under
// the group's lock.
class shared_slot_owner {
public:
    enum class state : std::uint8_t { resolved, pending, in_flight, failed };

protected:
    shared_slot_owner() = default;
    ~shared_slot_owner() = default;

    // This rank's contribution's payload: its size and its words; packing
    // returns the print of the variable's value (print_of), which every
    // rank's replica must share.
    virtual std::size_t contribution_words() const = 0;
    virtual std::uint32_t pack_contribution(word* out) const = 0;
    // Folds the reduced contribution into the value; the slot is gone.
    virtual void resolve(const word* reduced, std::size_t words) = 0;

    shared_group* group_ = nullptr;
    const slot_kind* kind_ = nullptr;  // its (T, Op)
    std::uint32_t id_ = 0;
    state state_ = state::resolved;
    std::size_t slot_ = 0;  // index in the group's pending or in-flight slots

    friend class csp::collectives::shared_group;
};

// The group's lock: a mutex when the runtime has several worker threads,
// nothing with one, so an update costs what an addition does.
using group_lock = csp::runtime_lock<std::mutex>;

}  // namespace detail

class shared_group {
public:
    template <communicator C>
    explicit shared_group(C& comm, stream s = {}, shared_options options = shared_options::from_environment())
        : rank_(comm.rank()),
          size_(comm.size()),
          options_(options),
          lock_(detail::group_lock::needed_here()) {
        reduce_ = [&comm, s](detail::block b, const detail::fused_op& op) {
            return allreduce(comm, std::move(b), op, s);
        };
        if constexpr (requires(std::size_t n) { comm.record_fusion(n, n); })
            record_ = [&comm](std::size_t updates, std::size_t slots) { comm.record_fusion(updates, slots); };
    }
    shared_group(const shared_group&) = delete;
    shared_group& operator=(const shared_group&) = delete;
    // Variables must not outlive their group.
    ~shared_group();

    int rank() const noexcept { return rank_; }
    int size() const noexcept { return size_; }

    // A force point for every pending update of the group: one reduction
    // resolves them all (none without pending updates, unless
    // check_every_force). Collective: every rank calls it at the same point.
    void flush() { force(nullptr); }
    // The same, spelled as a synchronisation.
    void sync() { flush(); }

    shared_statistics statistics() const {
        std::lock_guard lk(lock_);
        return stats_;
    }
    // Updates waiting for the next force point, and in how many slots.
    std::size_t pending_updates() const {
        std::lock_guard lk(lock_);
        return stats_.updates - updates_at_force_;
    }
    std::size_t pending_slots() const {
        std::lock_guard lk(lock_);
        return pending().size();
    }

private:
    using owner = detail::shared_slot_owner;
    struct slot {
        owner* var;                     // null once the variable is gone
        std::uint32_t id;
        std::uint32_t orphan;           // 1 + its index in orphans_ once gone while pending, else 0
        std::uint32_t print;            // once gone: its value's print when it went
        const detail::slot_kind* kind;
        std::size_t words;              // its payload (kept by add_slot and resized)
    };

    template <class T, class Op>
    friend class shared;

    // Gives a new variable its id (the same at every rank that creates its
    // variables in the same order).
    std::uint32_t enrol(const std::string& name, const detail::slot_kind& k);

    using lock_type = detail::group_lock;

    // Under lock_: waits, lock released, until no force point of this group
    // runs, then returns with the lock held again.
    void wait_for_force_end(std::unique_lock<lock_type>& lk);
    // Under lock_: the same, while the reduction that carries `v` runs.
    void wait_out_flight(std::unique_lock<lock_type>& lk, const owner& v) {
        while (v.state_ == owner::state::in_flight) wait_for_force_end(lk);
    }

    void throw_if_failed() const {
        if (failed_) std::rethrow_exception(failed_);
    }

    // Under lock_: makes `v` pending in a new slot.
    void add_slot(owner& v) {
        v.state_ = owner::state::pending;
        auto& list = pending();
        v.slot_ = list.size();
        list.push_back({&v, v.id_, 0, 0, v.kind_, v.contribution_words()});
    }
    // Under lock_: pending `v`'s contribution has a new length (a vector
    // variable assigned an expression of another length).
    void resized(owner& v) { pending()[v.slot_].words = v.contribution_words(); }

    // Under lock_: `from`'s slot (pending or in flight) now belongs to `to`.
    void move_slot(owner& from, owner& to) {
        auto& list = from.state_ == owner::state::in_flight ? in_flight() : pending();
        list[from.slot_].var = &to;
    }

    // Under lock_: `v` is going away with its slot still to be reduced; the
    // other ranks reduce it too, so its contribution stays.
    void orphan(owner& v);

    // The force point. `why` is the variable being read (null for flush):
    // if another process's reduction resolved it meanwhile, nothing is sent.
    void force(const owner* why);

    // The pending updates described by n descriptor pairs, for a mismatch.
    std::string describe(const detail::word* d, std::size_t n) const;
    // Only the forcing process calls it (the in-flight list is its own meanwhile).
    std::string mismatch_message(const detail::block& r);

    const int rank_;
    const int size_;
    const shared_options options_;
    std::function<detail::block(detail::block, const detail::fused_op&)> reduce_;
    std::function<void(std::size_t, std::size_t)> record_;
    mutable lock_type lock_;
    // One force point at a time per group: while forcing_, others wait for
    // one value each from wake_.
    bool forcing_ = false;
    std::size_t waiters_ = 0;
    csp::channel<int> wake_{csp::buffer::unbounded()};
    // Two lists of slots: the pending ones, in first-update order, and the
    // running reduction's, in id order. A force point turns the pending list
    // into the in-flight one by flipping pending_at_ (swapping the vectors
    // cost more than the rest of a small force point's bookkeeping).
    std::vector<slot>& pending() noexcept { return slots_[pending_at_]; }
    const std::vector<slot>& pending() const noexcept { return slots_[pending_at_]; }
    std::vector<slot>& in_flight() noexcept { return slots_[pending_at_ ^ 1u]; }
    std::vector<slot> slots_[2];
    unsigned pending_at_ = 0;
    std::vector<detail::block> orphans_;  // contributions of pending()'s gone variables
    std::vector<detail::fold_run> runs_;  // how the in-flight block folds
    detail::block spare_;                 // storage for the next block
    std::uint64_t updates_at_force_ = 0;  // stats_.updates at the last force point
    std::uint32_t next_id_ = 0;
    std::map<std::uint32_t, std::string> names_;
    std::map<std::uint32_t, std::string> kinds_named_;
    std::exception_ptr failed_;
    shared_statistics stats_;
};

}  // namespace csp::collectives
