#include "csp/alt.hpp"

#include <memory>
#include <new>
#include <type_traits>
#include <vector>

#include "csp/error.hpp"
#include "csp/observer.hpp"
#include "csp/detail/turn.hpp"

namespace csp::detail {
namespace {

class alt_site final : public wait_site {
public:
    explicit alt_site(std::span<guard* const> guards) : guards_(guards) {}

    void describe(std::string& out) const override {
        out += "selecting over [";
        bool first = true;
        for (const guard* g : guards_) {
            if (!g->enabled()) continue;
            if (!first) out += ", ";
            g->describe(out);
            first = false;
        }
        out += "]";
    }
    bool reachable_from_outside() const override {
        for (const guard* g : guards_)
            if (g->enabled() && g->reachable_from_outside()) return true;
        return false;
    }

private:
    std::span<guard* const> guards_;
};

// One wait_node per guard: on the stack for the common small alternation.
// Only the nodes of enabled guards are constructed (make()); a select over two
// guards touches two nodes, not eight.
class node_array {
public:
    explicit node_array(std::size_t n) {
        if (n > local_capacity) heap_ = std::make_unique<wait_node[]>(n);
    }
    wait_node& make(std::size_t i, waiter* w) {
        return *new (address(i)) wait_node{w, static_cast<int>(i)};
    }
    wait_node& operator[](std::size_t i) { return *std::launder(static_cast<wait_node*>(address(i))); }

private:
    static constexpr std::size_t local_capacity = 8;
    static_assert(std::is_trivially_destructible_v<wait_node>);
    void* address(std::size_t i) {
        return heap_ ? static_cast<void*>(&heap_[i]) : static_cast<void*>(local_ + i * sizeof(wait_node));
    }

    alignas(wait_node) unsigned char local_[local_capacity * sizeof(wait_node)];
    std::unique_ptr<wait_node[]> heap_;
};

// The protocol, in the order of guard.hpp:
//  1. Try every enabled guard, starting at `first`. Nobody can see this
//     alternation yet, so the first channel-like guard that completes is the
//     choice. An unconditional guard that is ready (skip, a due timeout) is
//     only a fallback: a priority select stops looking at it (the guards
//     after it are never chosen); a fair select looks at the rest first.
//  2. Make a waiter and enable the guards in the same order. A guard that
//     reports itself ready means a partner arrived after step 1: withdraw by
//     committing our own waiter to `retry`, and start again. If that commit
//     fails, a partner already chose us; absorb its wake (waiter invariant 3).
//  3. With a fallback (a polling select), commit our own waiter to it at
//     once; otherwise suspend until a partner or the earliest deadline
//     commits us.
//  4. Disable every enabled guard, then let the chosen guard finish.
//
// Why step 3 makes a polling select linearizable (Go's TestNonblockSelectRace,
// crossbeam's linearizable_try): step 1 looks at the guards one at a time, so
// each may have been ready at some moment of the search though none was when
// looked at. After step 2, a partner that makes an enabled guard ready commits
// our waiter; so if our own commit to the fallback succeeds, no guard became
// ready between its enabling and that commit, and none was ready when enabled:
// at the instant of the commit, no guard was ready. With one conditional guard
// step 1's look was already such an instant, and steps 2-3 are skipped.
std::size_t select_once(std::span<guard* const> guards, std::size_t first, select_order order) {
    const std::size_t n = guards.size();
    if (n == 0) throw usage_error("select: no guards to choose from (an empty list)");
    auto at = [&](std::size_t k) { return (first + k) % n; };
    bool any_enabled = false;
    for (const guard* g : guards) any_enabled = any_enabled || g->enabled();
    if (!any_enabled) throw usage_error("select: no guard is enabled (every precondition is false)");

    const alt_site site(guards);
    for (;;) {
        std::size_t upto = n;  // guards at(0..upto-1) take part in steps 2-4
        int fallback = waiter::retry;
        std::size_t conditional = 0;
        for (std::size_t k = 0; k < upto; ++k) {
            guard* g = guards[at(k)];
            if (!g->enabled()) continue;
            if (!g->unconditional()) {
                ++conditional;
                if (g->try_complete()) {
                    notify_chose(guards, at(k));
                    return at(k);
                }
            } else if (fallback == waiter::retry && g->try_complete()) {
                fallback = static_cast<int>(at(k));
                if (order == select_order::priority) upto = k;
            }
        }
        const bool polling = fallback != waiter::retry;
        if (polling && conditional <= 1) {
            notify_chose(guards, static_cast<std::size_t>(fallback));
            return static_cast<std::size_t>(fallback);
        }
        // A polling select enables only the conditional guards it looked at.
        auto takes_part = [&](const guard* g) { return g->enabled() && !(polling && g->unconditional()); };

        clock::time_point deadline = clock::time_point::max();
        int timeout_index = waiter::retry;
        for (std::size_t k = 0; k < upto && !polling; ++k) {
            const guard* g = guards[at(k)];
            if (g->enabled() && g->deadline() < deadline) {
                deadline = g->deadline();
                timeout_index = static_cast<int>(at(k));
            }
        }

        waiter w(deadline != clock::time_point::max());
        w.set_site(&site);
        node_array nodes(n);
        std::size_t enabled_upto = 0;  // guards at(0..enabled_upto-1) need disabling
        bool ready = false;
        try {
            for (std::size_t k = 0; k < upto && !ready; ++k) {
                const std::size_t i = at(k);
                if (!takes_part(guards[i])) continue;
                wait_node& node = nodes.make(i, &w);
                enabled_upto = k + 1;
                ready = guards[i]->enable(node);
            }
        } catch (...) {
            if (!w.commit(waiter::retry)) w.absorb();
            for (std::size_t k = 0; k < enabled_upto; ++k)
                if (takes_part(guards[at(k)])) guards[at(k)]->disable(nodes[at(k)]);
            throw;
        }

        int chosen;
        if (ready) {
            chosen = w.commit(waiter::retry) ? waiter::retry : w.absorb();
        } else if (polling) {
            chosen = w.commit(fallback) ? fallback : w.absorb();
        } else {
            chosen = w.wait(deadline, timeout_index);
        }
        for (std::size_t k = 0; k < enabled_upto; ++k)
            if (takes_part(guards[at(k)])) guards[at(k)]->disable(nodes[at(k)]);

        if (chosen == waiter::retry) continue;
        if (chosen == waiter::aborted) w.throw_aborted();
        const auto i = static_cast<std::size_t>(chosen);
        if (i != static_cast<std::size_t>(fallback)) guards[i]->complete(nodes[i]);
        notify_chose(guards, i);
        return i;
    }
}

}  // namespace

// Every select counts against its process's turn (turn.hpp): a loop of
// selects that never wait, a polling loop above all, must still let its
// worker switch.
std::size_t select_from(std::span<guard* const> guards, std::size_t first, select_order order) {
    const std::size_t chosen = select_once(guards, first, order);
    count_turn_op();
    return chosen;
}

}  // namespace csp::detail
