#pragma once
// Alternation: wait for the first of several guards.
//
//   int v; std::string s;
//   switch (csp::select(csp::input(numbers, v), csp::input(names, s).when(want_names),
//                       csp::timeout(100ms))) {
//       case 0: ...; case 1: ...; case 2: /* nothing within 100 ms */ ...
//   }
//
// select() is a priority select: the first ready guard in the order given
// wins. A csp::alternation object remembers its last choice and offers
// fair_select(), which starts looking just after it, so guards that are always
// ready are served in turn. Exactly one guard commits: an input that did not
// commit took nothing, an output that did not commit still holds its value.
#include <array>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "csp/channel.hpp"
#include "csp/deadline_after.hpp"
#include "csp/guard.hpp"

namespace csp {

// Input guard: on commit, the value read is assigned to `dest`.
template <class T>
class input_guard final : public guard_base<input_guard<T>> {
public:
    input_guard(const reader<T>& r, T& dest) : core_(&r.checked()), dest_(&dest) {}

    bool try_complete() override {
        std::optional<T> v;
        if (!core_->try_read(v)) return false;
        *dest_ = std::move(*v);
        detail::notify(event::kind::channel_read, core_);
        return true;
    }
    bool enable(wait_node& n) override {
        n.slot = &slot_;
        return core_->enable_read(n);
    }
    void disable(wait_node& n) override { core_->disable(detail::reading, n); }
    void complete(wait_node& n) override {
        core_->complete(detail::reading, n);
        *dest_ = std::move(*slot_);
        detail::notify(event::kind::channel_read, core_);
    }
    void describe(std::string& out) const override {
        detail::channel_base::site(core_, detail::reading).describe(out);
    }
    bool reachable_from_outside() const override { return core_->reachable_from_outside(); }
    const detail::channel_base* offered_channel(bool& writes) const noexcept override {
        writes = false;
        return core_;
    }

private:
    detail::channel_core<T>* core_;
    T* dest_;
    std::optional<T> slot_;
};

// Output guard: offers a value; it leaves the guard only if the guard commits.
template <class T>
class output_guard final : public guard_base<output_guard<T>> {
public:
    // Offers `value` in place: moved from only on commit.
    output_guard(const writer<T>& w, T& value) : core_(&w.checked()), value_(&value) {}
    // Offers a value the guard owns.
    output_guard(const writer<T>& w, T&& value)
        : core_(&w.checked()), owned_(std::move(value)), value_(&*owned_) {}
    output_guard(output_guard&& o) noexcept
        : core_(o.core_), owned_(std::move(o.owned_)), value_(owned_ ? &*owned_ : o.value_) {
        this->enabled_ = o.enabled_;
    }

    bool try_complete() override {
        if (!core_->try_write(*value_)) return false;
        detail::notify(event::kind::channel_write, core_);
        return true;
    }
    bool enable(wait_node& n) override {
        n.slot = value_;
        return core_->enable_write(n);
    }
    void disable(wait_node& n) override { core_->disable(detail::writing, n); }
    void complete(wait_node& n) override {
        core_->complete(detail::writing, n);
        detail::notify(event::kind::channel_write, core_);
    }
    void describe(std::string& out) const override {
        detail::channel_base::site(core_, detail::writing).describe(out);
    }
    bool reachable_from_outside() const override { return core_->reachable_from_outside(); }
    const detail::channel_base* offered_channel(bool& writes) const noexcept override {
        writes = true;
        return core_;
    }

private:
    detail::channel_core<T>* core_;
    std::optional<T> owned_;
    T* value_;
};

// Ready once its deadline has passed.
class timeout_guard final : public guard_base<timeout_guard> {
public:
    explicit timeout_guard(clock::time_point at) : at_(at) {}
    bool try_complete() override { return clock::now() >= at_; }
    bool enable(wait_node&) override { return false; }
    void disable(wait_node&) override {}
    void complete(wait_node&) override {}
    clock::time_point deadline() const override { return at_; }
    bool unconditional() const override { return true; }
    void describe(std::string& out) const override { out += "a timeout"; }

private:
    clock::time_point at_;
};

// Always ready: a select with a skip guard never blocks.
class skip_guard final : public guard_base<skip_guard> {
public:
    bool try_complete() override { return true; }
    bool enable(wait_node&) override { return true; }
    void disable(wait_node&) override {}
    void complete(wait_node&) override {}
    bool unconditional() const override { return true; }
    void describe(std::string& out) const override { out += "skip"; }
};

template <class T>
input_guard<T> input(const reader<T>& r, T& dest) { return {r, dest}; }
template <class T, class V>
output_guard<T> output(const writer<T>& w, V&& value) { return {w, std::forward<V>(value)}; }
template <class Rep, class Period>
timeout_guard timeout(std::chrono::duration<Rep, Period> d) {
    return timeout_guard(deadline_after(d));
}
inline timeout_guard deadline(clock::time_point at) { return timeout_guard(at); }
inline skip_guard skip() { return {}; }

namespace detail {
// The whole algorithm (alt.cpp). `first` is where the search starts; a
// priority select starts at 0 and treats a skip or due timeout as ready in
// its place, so the guards after it are never chosen; a fair one considers
// those only once no other guard is ready.
enum class select_order { priority, fair };
std::size_t select_from(std::span<guard* const> guards, std::size_t first, select_order order);
}  // namespace detail

// Priority select over guards of any kinds; returns the index of the one that
// committed. Throws usage_error if no guard is enabled.
template <class... G>
    requires(std::derived_from<std::remove_cvref_t<G>, guard> && ...)
std::size_t select(G&&... guards) {
    const std::array<guard*, sizeof...(G)> gs{static_cast<guard*>(&guards)...};
    return detail::select_from(gs, 0, detail::select_order::priority);
}

// Priority select over a run-time list (occam's replicated ALT).
inline std::size_t select(std::span<guard* const> guards) {
    return detail::select_from(guards, 0, detail::select_order::priority);
}

// Alternation with memory, for fair selection (JCSP's Alternative).
class alternation {
public:
    template <class... G>
        requires(std::derived_from<std::remove_cvref_t<G>, guard> && ...)
    std::size_t pri_select(G&&... guards) { return select(std::forward<G>(guards)...); }
    std::size_t pri_select(std::span<guard* const> guards) { return select(guards); }

    template <class... G>
        requires(std::derived_from<std::remove_cvref_t<G>, guard> && ...)
    std::size_t fair_select(G&&... guards) {
        const std::array<guard*, sizeof...(G)> gs{static_cast<guard*>(&guards)...};
        return fair_select(std::span<guard* const>(gs));
    }
    std::size_t fair_select(std::span<guard* const> guards) {
        const std::size_t chosen = detail::select_from(guards, guards.empty() ? 0 : favourite_ % guards.size(),
                                                      detail::select_order::fair);
        favourite_ = chosen + 1;
        return chosen;
    }

private:
    std::size_t favourite_ = 0;
};

}  // namespace csp
