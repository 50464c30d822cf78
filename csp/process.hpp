#pragma once
// Composing processes: par, par_for, seq.
//
// A process is any callable. par() runs callables concurrently, each on its
// own fiber, and returns when all have finished: their results as a tuple
// (std::monostate for a void one), or nothing if all return void. If some
// branches throw, par still waits for every branch, then rethrows the first
// failure. Poisoning the channels a failing branch shares with the others is
// how it stops them (see channel.hpp).
//
//   auto [sum, count] = csp::par([&] { return add(in1); }, [&] { return tally(in2); });
//   csp::par_for(n, [&](std::size_t i) { worker(i, jobs.reader(), results.writer()); });
//   csp::par(csp::proc("producer", [w = c.writer()] { ... }), ...);  // named
#include <algorithm>
#include <cstddef>
#include <exception>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "csp/detail/spawn.hpp"
#include "csp/priority.hpp"

namespace csp {

namespace detail {

inline process_record* calling_process(const char* what) {
    process_record* self = current_process();
    if (self == nullptr)
        throw usage_error(std::string(what) + " must be called from a process of a running csp::runtime");
    return self;
}

// The frame of every par: `start(self, join)` spawns the n children; then
// wait for all of them and rethrow the first failure.
template <class Start>
void run_children(const char* what, std::size_t n, Start&& start, std::source_location made_at = {}) {
    process_record* self = calling_process(what);
    join_state join(n, family{self->runtime(), self, made_at});
    notify(event::kind::par_begin, nullptr, n);
    try {
        start(self, &join);
    } catch (...) {
        rethrow_when_started_end(join, std::current_exception());
    }
    join.wait();
    notify(event::kind::par_end);
    join.rethrow_if_failed();
}

template <class R>
auto take_result(result_slot<R>& slot) {
    if constexpr (std::is_void_v<R>) return std::monostate{};
    else return std::move(*slot.value);
}

// par() with branch i at priority prio(parent's priority, i).
template <class Prio, class... F>
auto par_prioritised(const char* what, Prio prio, F&&... branches) {
    std::tuple<result_slot<process_result_t<F>>...> results;
    run_children(what, sizeof...(F), [&](auto* self, auto* join) {
        const int base = self->priority.load(std::memory_order_relaxed);
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            (spawn(join, I, std::forward<F>(branches), &std::get<I>(results), prio(base, I)), ...);
        }(std::index_sequence_for<F...>{});
    });
    if constexpr ((std::is_void_v<process_result_t<F>> && ...)) {
        return;
    } else {
        return std::apply([](auto&... slot) { return std::make_tuple(take_result(slot)...); }, results);
    }
}

}  // namespace detail

template <class... F>
auto par(F&&... branches) {
    return detail::par_prioritised("csp::par", [](int base, std::size_t) { return base; },
                                   std::forward<F>(branches)...);
}

// occam-pi's PRI PAR: par() with descending priorities. The first branch
// runs at the caller's priority, each further one a level lower, down to
// priority_lowest (where the rest share it). Like every priority, this only
// orders ready processes; it never makes a branch wait for another.
template <class... F>
auto pri_par(F&&... branches) {
    return detail::par_prioritised(
        "csp::pri_par",
        [](int base, std::size_t i) { return std::max(priority_lowest, base - static_cast<int>(i)); },
        std::forward<F>(branches)...);
}

// occam's PAR i = 0 FOR n: runs body(i) for i in [0, n) concurrently. Returns
// the results in index order, or nothing if body returns void.
//
// Each branch runs its own copy of body (the last branch the original, moved
// from when body is a temporary), like n processes started with the same
// arguments: what body captures by value belongs to one branch, and a
// channel end it captures is a holder of its own in every branch (channel.hpp),
// so each branch retires only its own. Capture big data by reference. A body
// that cannot be copied is shared by every branch.
template <class F>
auto par_for(std::size_t n, F&& body, std::source_location at = std::source_location::current()) {
    using B = std::decay_t<F>;
    using R = std::invoke_result_t<B&, std::size_t>;
    std::vector<detail::result_slot<R>> results(n);
    detail::run_children(
        "csp::par_for", n,
        [&](auto*, auto* join) {
            for (std::size_t i = 0; i < n; ++i) {
                if constexpr (std::is_copy_constructible_v<B>) {
                    auto branch = [&]() -> B {
                        if (i + 1 == n) return B(std::forward<F>(body));
                        detail::copy_context own_holders(detail::ends_for_new_branch);
                        return B(body);
                    };
                    detail::spawn(join, i, [b = branch(), i]() mutable -> R { return b(i); }, &results[i]);
                } else {
                    detail::spawn(join, i, [&body, i]() -> R { return body(i); }, &results[i]);
                }
            }
        },
        at);
    if constexpr (!std::is_void_v<R>) {
        std::vector<R> out;
        out.reserve(n);
        for (auto& r : results) out.push_back(std::move(*r.value));
        return out;
    }
}

// Runs the steps one after another in the calling process; returns their
// results like par().
template <class... F>
auto seq(F&&... steps) {
    detail::notify(event::kind::seq_begin, nullptr, sizeof...(F));
    auto run_one = [](auto&& step) {
        using traits = detail::process_traits<std::decay_t<decltype(step)>>;
        auto& fn = traits::callable(step);
        if constexpr (std::is_void_v<std::invoke_result_t<decltype(fn)>>) {
            fn();
            return std::monostate{};
        } else {
            return fn();
        }
    };
    // Braced initialisation evaluates left to right: the steps run in order.
    std::tuple<decltype(run_one(std::forward<F>(steps)))...> results{run_one(std::forward<F>(steps))...};
    detail::notify(event::kind::seq_end);
    if constexpr ((std::is_void_v<detail::process_result_t<F>> && ...)) {
        return;
    } else {
        return results;
    }
}

namespace this_process {
// Whether the caller is a process of a running csp runtime (and not a plain
// thread, or a fiber started by other code).
inline bool inside_runtime() noexcept { return detail::current_process() != nullptr; }
// The worker threads of the caller's runtime (0 for a caller outside any):
// with 1, its processes never run at the same time.
inline std::size_t runtime_threads() noexcept {
    auto* p = detail::current_process();
    return p ? p->runtime()->threads() : 0;
}
// Names the caller's runtime (nullptr outside any): equal for the processes
// of one runtime, different for two runtimes alive at once.
inline const void* runtime_id() noexcept {
    auto* p = detail::current_process();
    return p ? p->runtime() : nullptr;
}
// The calling process's name ("main.1.0" when it was not given one).
inline std::string name() { return detail::calling_process("csp::this_process::name")->label(); }
inline void set_name(std::string n) { detail::calling_process("csp::this_process::set_name")->set_name(std::move(n)); }
// The calling process's priority (priority.hpp).
inline priority get_priority() {
    return detail::calling_process("csp::this_process::get_priority")->priority.load(std::memory_order_relaxed);
}
// Changes the calling process's priority; it applies from the process's next
// wait or yield on, and to the processes it starts from now on.
inline void set_priority(priority p) {
    if (p < priority_lowest || p > priority_highest)
        throw usage_error("csp::this_process::set_priority: priority " + std::to_string(p) + " is outside [" +
                          std::to_string(priority_lowest) + ", " + std::to_string(priority_highest) + "]");
    detail::calling_process("csp::this_process::set_priority")
        ->priority.store(static_cast<std::int8_t>(p), std::memory_order_relaxed);
}
}  // namespace this_process

}  // namespace csp
