#pragma once
// The guard contract used by alternation (alt.hpp).
//
// A guard is one thing a process may wait for among others: a channel input
// or output, a timeout, skip; outside csp/, a socket's readiness or a network
// port. Alternation drives every guard through the same steps:
//
//   try_complete()  Complete now if possible, without registering anything.
//                   The alternation is invisible to partners during this step.
//   enable(node)    Register `node` so a partner can commit it (waiter.hpp),
//                   and report whether the guard looks ready already. If any
//                   guard does, the alternation withdraws and tries again.
//   disable(node)   Remove the registration (called for every enabled guard,
//                   whether or not it registered or fired).
//   complete(node)  This guard's node was committed by a partner: finish, for
//                   example move the received value out, or throw if the node
//                   was released by poison or retirement.
//
// A new kind of guard implements these five functions and follows the waiter
// invariants; csp/ needs no change to alternate over it.
#include <string>

#include "csp/waiter.hpp"

namespace csp {

namespace detail {
class channel_base;
}

class guard {
public:
    virtual ~guard() = default;

    virtual bool try_complete() = 0;
    virtual bool enable(wait_node& node) = 0;
    virtual void disable(wait_node& node) = 0;
    virtual void complete(wait_node& node) = 0;

    // When the guard becomes ready by itself (timeouts); max() if never.
    virtual clock::time_point deadline() const { return clock::time_point::max(); }

    // Ready without any partner once ready (skip, a timeout that is due):
    // choosing it claims that the other guards were not ready, which the
    // alternation must check at one instant (alt.cpp, the polling step).
    virtual bool unconditional() const { return false; }

    // Appends what the guard waits for ("reading from channel 'x'"), for reports.
    virtual void describe(std::string& out) const = 0;

    // Could a thread outside the runtime make this guard ready? (wait_site)
    virtual bool reachable_from_outside() const { return false; }

    // The channel end the guard offers, for observers: the channel, and
    // whether the guard writes to it; nullptr for any other kind of guard
    // (a timeout, skip, an IO watch).
    virtual const detail::channel_base* offered_channel(bool& writes) const noexcept {
        writes = false;
        return nullptr;
    }

    // The boolean precondition: a disabled guard takes no part.
    bool enabled() const noexcept { return enabled_; }

protected:
    bool enabled_ = true;
};

// Gives a concrete guard a chainable precondition: input(r, v).when(ready).
template <class Derived>
class guard_base : public guard {
public:
    Derived& when(bool precondition) & {
        enabled_ = precondition;
        return static_cast<Derived&>(*this);
    }
    Derived&& when(bool precondition) && {
        enabled_ = precondition;
        return static_cast<Derived&&>(*this);
    }
};

}  // namespace csp
