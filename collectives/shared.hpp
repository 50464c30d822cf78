#pragma once
// Shared reduction variables: global state with one replica per rank whose
// updates are deferred and fused (CFL).
//
//   cc::shared_group g(comm);                      // shared_group.hpp
//   cc::shared<double> s1(g, 0.0, "s1"), s2(g, 0.0, "s2");
//   for (double v : my_part) { s1 += v; s2 += v * v; }   // no message
//   double var = (s2 - s1 * s1 / n) / (n - 1);     // one allreduce for both
//
// Semantics (x, y shared<T, Op>; a, b local values of this rank; R(a) is
// the reduction with Op of every rank's a):
//
//   x op= a,  x = x op a     contribute: x becomes x op R(a). Every rank
//                            contributes; nothing is sent until a force point.
//   x = y op a               x becomes y op R(a).
//   x = y op z, x = y        computed locally (shared op shared is shared);
//                            pending contributions of y and z carry over.
//   x = a, x = a - b         refused at compile time: a rank's own value is
//                            not a shared value. x = cc::same(v) assigns a
//                            value the program knows is equal at every rank.
//   T v = x;  x.get();       a force point: reading a variable that has a
//   double v = x - a;        contribution pending reduces, in one allreduce,
//   os << x;                 every pending contribution of its group. An
//                            expression read into a local (double v = x - a)
//                            is computed locally from x's value: the target
//                            decides, as in CFL.
//   x.contribute(a)          x becomes x op R(a), for any op (min, max, ...).
//
// The operator symbols follow the op: + and - for sum (x - a contributes
// -a), * for product, & | ^ for bit_and, bit_or, bit_xor; any other use of a
// shared variable in arithmetic reads it first (a force point). Op must
// commute (contributions are folded before they are reduced: x op R(a) op
// R(b) is x op R(a op b) only then): the built-in ops, or a user op type
// with `static constexpr bool fusible = true` and `commutes = true`. T is a
// number (or any trivially copyable value the op takes) or a std::vector of
// them, reduced element by element; a vector's contributions must keep its
// length.
//
// Variables get their identity from the order they are created in their
// group: create them in the same order at every rank. A variable may be
// copied (the copy is a new variable with the same value and pending
// contribution) and moved; it must not outlive its group. Expressions
// (cc::lazy) are meant to be assigned or read at once: they refer to the
// variables they were made from.
#include <array>
#include <concepts>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "collectives/shared_group.hpp"
#include "csp/address_fields.hpp"

namespace csp::collectives {

// A value the program asserts is the same at every rank.
template <class T>
struct same_value {
    T value;
};
template <class T>
same_value<T> same(T v) { return {std::move(v)}; }

template <class T, class Op>
class shared;
template <class T, class Op>
class lazy;

namespace detail {

template <class Op>
constexpr bool builtin_op = std::is_same_v<Op, sum> || std::is_same_v<Op, product> ||
                            std::is_same_v<Op, minimum> || std::is_same_v<Op, maximum> ||
                            std::is_same_v<Op, bit_and> || std::is_same_v<Op, bit_or> ||
                            std::is_same_v<Op, bit_xor> || std::is_same_v<Op, logical_and> ||
                            std::is_same_v<Op, logical_or>;

template <class Op>
constexpr bool fusible_op = builtin_op<Op> || (std::is_default_constructible_v<Op> && requires {
    requires static_cast<bool>(Op::fusible);
    requires static_cast<bool>(Op::commutes);
});

template <class E>
constexpr bool shareable_element = std::is_trivially_copyable_v<E> && !holds_address_v<E> && !std::is_same_v<E, bool>;

template <class T>
constexpr bool shareable_value = is_vector<T>::value ? shareable_element<typename element<T>::type>
                                                     : shareable_element<T>;

template <class T> struct is_shared_expr : std::false_type {};
template <class T, class Op> struct is_shared_expr<shared<T, Op>> : std::true_type {};
template <class T, class Op> struct is_shared_expr<lazy<T, Op>> : std::true_type {};
template <class T> struct is_shared_expr<same_value<T>> : std::true_type {};

// A rank-local value usable where a T is.
template <class U, class T>
concept local_value = !is_shared_expr<std::remove_cvref_t<U>>::value && std::convertible_to<const U&, T>;

template <class T>
T negate(T v) {
    if constexpr (is_vector<T>::value) {
        for (auto& e : v) e = -e;
        return v;
    } else {
        return -v;
    }
}

inline void check_length(std::size_t have, std::size_t got) {
    if (have != got)
        throw usage_error("shared variable: a contribution of " + std::to_string(got) +
                          " elements to a vector of " + std::to_string(have));
}

}  // namespace detail

// An expression over shared variables and local values, not yet assigned:
// terms (shared variables, each maybe negated) folded with Op and a local
// part. Assigned to a shared variable it keeps the terms' pending
// contributions and contributes the local part; read as a T it forces the
// terms and folds locally.
template <class T, class Op>
class lazy {
public:
    T get() const {
        std::optional<T> out = local_;
        for (std::uint8_t i = 0; i < n_; ++i) {
            T v = terms_[i].var->get();
            if (terms_[i].negated) v = detail::negate(std::move(v));
            if (out) detail::combine_into(Op{}, *out, v, false);
            else out = std::move(v);
        }
        return std::move(*out);
    }
    operator T() const { return get(); }

    friend std::ostream& operator<<(std::ostream& os, const lazy& e) { return os << e.get(); }

private:
    struct term {
        const shared<T, Op>* var;
        bool negated;
    };
    static constexpr std::uint8_t max_terms = 4;

    lazy() = default;
    lazy& add(const shared<T, Op>& v, bool negated) {
        if (n_ == max_terms)
            throw usage_error("shared variables: an expression of more than " + std::to_string(max_terms) +
                              " shared variables; assign part of it to a shared variable first");
        terms_[n_++] = {&v, negated};
        return *this;
    }
    lazy& add(const lazy& e, bool negated) {
        for (std::uint8_t i = 0; i < e.n_; ++i) add(*e.terms_[i].var, e.terms_[i].negated != negated);
        if (e.local_) {
            T v = negated ? detail::negate(*e.local_) : *e.local_;
            if (local_) detail::combine_into(Op{}, *local_, v, false);
            else local_ = std::move(v);
        }
        updates_ = static_cast<std::uint8_t>(updates_ + e.updates_);
        return *this;
    }
    lazy& add_local(T a) {
        if (local_) detail::combine_into(Op{}, *local_, a, false);
        else local_ = std::move(a);
        ++updates_;
        return *this;
    }

    std::array<term, max_terms> terms_{};
    std::uint8_t n_ = 0;
    std::uint8_t updates_ = 0;  // local values folded in: each is one contribution
    std::optional<T> local_;

    friend class shared<T, Op>;
    template <class, class, char>
    friend struct lazy_builder;
};

template <class T, class Op = sum>
class shared final : private detail::shared_slot_owner {
    static_assert(detail::fusible_op<Op>,
                  "shared<T, Op>: Op must be a built-in op or a type with static constexpr bool fusible = true and "
                  "commutes = true");
    static_assert(
        detail::shareable_value<T>,
        "shared<T, Op>: T must be a trivially copyable value (not a pointer or bool) or a std::vector of them");

public:
    using value_type = T;
    using op_type = Op;

    // Collective: every rank creates its variables in the same order, with
    // the same initial value.
    explicit shared(shared_group& g, T initial = T{}, std::string name = {}) : value_(std::move(initial)) {
        group_ = &g;
        kind_ = &detail::kind_of<T, Op>();
        id_ = g.enrol(name, *kind_);
    }
    // A new variable holding an expression's value (and its contributions).
    shared(const lazy<T, Op>& e) : shared(*e.terms_[0].var->group_) { *this = e; }
    // A new variable with o's value and o's pending contribution.
    shared(const shared& o) : shared(*o.group_) { *this = o; }
    shared(shared&& o) noexcept : detail::shared_slot_owner() {
        group_ = o.group_;
        kind_ = o.kind_;
        std::lock_guard lk(group_->lock_);
        take(o);
    }
    ~shared() {
        std::lock_guard lk(group_->lock_);
        if (state_ == state::pending || state_ == state::in_flight) group_->orphan(*this);
    }

    shared& operator=(const shared& o) {
        if (this == &o) return *this;
        lazy<T, Op> e;
        e.add(o, false);
        return *this = e;
    }
    shared& operator=(shared&& o) {
        if (this == &o) return *this;
        if (group_ != o.group_) throw usage_error("shared variables: a variable moved into one of another group");
        std::unique_lock lk(group_->lock_);
        if (state_ == state::pending || state_ == state::in_flight) group_->orphan(*this);
        take(o);
        return *this;
    }
    shared& operator=(const lazy<T, Op>& e) {
        shared_group& g = *group_;
        std::unique_lock lk(g.lock_);
        wait_out_flights(lk, e);
        std::optional<T> base;
        std::optional<T> acc = e.local_;
        for (std::uint8_t i = 0; i < e.n_; ++i) {
            const shared& v = *e.terms_[i].var;
            if (v.group_ != &g) throw usage_error("shared variables: an expression mixes variables of two groups");
            if (v.state_ == state::failed) g.throw_if_failed();
            fold(base, v.value_, e.terms_[i].negated);
            if (v.state_ == state::pending) fold(acc, *v.acc_, e.terms_[i].negated);
        }
        if constexpr (detail::is_vector<T>::value)
            if (acc) detail::check_length(base->size(), acc->size());
        value_ = std::move(*base);
        if (acc) {
            acc_ = std::move(acc);
            if (state_ != state::pending) g.add_slot(*this);
            else if constexpr (detail::is_vector<T>::value) g.resized(*this);
        } else if (state_ == state::pending) {
            g.orphan(*this);  // the other ranks reduce it too; its result goes nowhere
            state_ = state::resolved;
        } else {
            state_ = state::resolved;
        }
        g.stats_.updates += e.updates_;
        return *this;
    }
    shared& operator=(same_value<T> v) {
        std::unique_lock lk(group_->lock_);
        group_->wait_out_flight(lk, *this);
        if (state_ == state::pending) group_->orphan(*this);
        value_ = std::move(v.value);
        state_ = state::resolved;
        return *this;
    }
    // A rank's own value is not a shared value: see the header comment
    // (x = cc::same(v) for a value known to be equal at every rank).
    template <class U>
        requires(!detail::is_shared_expr<std::remove_cvref_t<U>>::value)
    shared& operator=(const U&) = delete;

    // x becomes x op R(a).
    void contribute(const T& a) {
        // The common cases, inline, in a runtime of one thread (no lock to
        // take): a number folded into a pending contribution, or the first
        // contribution since the last force point.
        if constexpr (!detail::is_vector<T>::value) {
            if (!group_->lock_.real() && (state_ == state::pending || state_ == state::resolved)) {
                contribute_locked(a);
                return;
            }
        }
        contribute_slowly(a);
    }

private:
    [[gnu::noinline]] void contribute_slowly(const T& a) {
        std::unique_lock lk(group_->lock_);
        group_->wait_out_flight(lk, *this);
        if constexpr (detail::is_vector<T>::value) detail::check_length(value_.size(), a.size());
        contribute_locked(a);
    }
    // Under the group's lock, with no reduction carrying this variable.
    void contribute_locked(const T& a) {
        if (state_ == state::pending) {
            detail::combine_into(Op{}, *acc_, a, false);
        } else {
            acc_ = a;
            group_->add_slot(*this);
        }
        ++group_->stats_.updates;
    }

public:
    // The value: a force point if a contribution is pending.
    T get() const {
        shared_group& g = *group_;
        std::unique_lock lk(g.lock_);
        bool forced = false;
        while (state_ != state::resolved || (g.options_.check_every_force && !forced)) {
            lk.unlock();
            g.force(this);
            forced = true;
            lk.lock();
        }
        return value_;
    }
    operator T() const { return get(); }

    // Whether a contribution waits for a force point.
    bool pending() const {
        std::lock_guard lk(group_->lock_);
        return state_ == state::pending || state_ == state::in_flight;
    }
    shared_group& group() const noexcept { return *group_; }

    friend std::ostream& operator<<(std::ostream& os, const shared& x) { return os << x.get(); }

private:
    // Under the group's lock: o's value, contribution and slot are now ours.
    void take(shared& o) {
        value_ = std::move(o.value_);
        acc_ = std::move(o.acc_);
        id_ = o.id_;
        state_ = o.state_;
        slot_ = o.slot_;
        if (state_ == state::pending || state_ == state::in_flight) group_->move_slot(o, *this);
        o.state_ = state::resolved;
        o.acc_.reset();
    }

    void wait_out_flights(std::unique_lock<detail::group_lock>& lk, const lazy<T, Op>& e) {
        for (;;) {
            group_->wait_out_flight(lk, *this);
            bool clear = state_ != state::in_flight;
            for (std::uint8_t i = 0; i < e.n_ && clear; ++i)
                if (e.terms_[i].var->state_ == state::in_flight) {
                    group_->wait_out_flight(lk, *e.terms_[i].var);
                    clear = false;
                }
            if (clear) return;
        }
    }

    static void fold(std::optional<T>& into, const T& v, bool negated) {
        if (!into) into = negated ? detail::negate(v) : v;
        else if (negated) detail::combine_into(Op{}, *into, detail::negate(v), false);
        else detail::combine_into(Op{}, *into, v, false);
    }

    std::size_t contribution_words() const override { return detail::payload_words(*acc_); }
    std::uint32_t pack_contribution(detail::word* out) const override {
        detail::pack(out, *acc_);
        return detail::print_of(value_);
    }
    void resolve(const detail::word* reduced, std::size_t words) override {
        detail::combine_into(Op{}, value_, detail::unpack<T>(reduced, words), false);
        acc_.reset();
    }

    T value_;
    std::optional<T> acc_;  // this rank's contribution, while pending or in flight

    friend class lazy<T, Op>;
    template <class, class, char>
    friend struct lazy_builder;
};

// The operators. Each builds a lazy expression; `S` is the symbol, spelled
// only for the op it means (+ and - for sum, * for product, & | ^ for the
// bitwise ops).
template <class Op, char S>
concept spells = (S == '+' && std::is_same_v<Op, sum>) || (S == '-' && std::is_same_v<Op, sum>) ||
                 (S == '*' && std::is_same_v<Op, product>) || (S == '&' && std::is_same_v<Op, bit_and>) ||
                 (S == '|' && std::is_same_v<Op, bit_or>) || (S == '^' && std::is_same_v<Op, bit_xor>);

template <class T, class Op, char S>
struct lazy_builder {
    static constexpr bool minus = S == '-';
    template <class A, class B>
    static lazy<T, Op> make(const A& a, const B& b) {
        lazy<T, Op> e;
        put(e, a, false);
        put(e, b, minus);
        return e;
    }
    static void put(lazy<T, Op>& e, const shared<T, Op>& v, bool negated) { e.add(v, negated); }
    static void put(lazy<T, Op>& e, const lazy<T, Op>& v, bool negated) { e.add(v, negated); }
    template <class U>
    static void put(lazy<T, Op>& e, const U& a, bool negated) {
        T v = static_cast<T>(a);
        e.add_local(negated ? detail::negate(std::move(v)) : std::move(v));
    }
    template <class B>
    static shared<T, Op>& compound(shared<T, Op>& x, const B& b) {
        if constexpr (detail::local_value<B, T>) {
            T v = static_cast<T>(b);
            x.contribute(minus ? detail::negate(std::move(v)) : std::move(v));
            return x;
        } else {
            return x = make(x, b);
        }
    }
};

}  // namespace csp::collectives

// Every combination of a shared variable, an expression and a local value.
#define CSP_SHARED_OPERATOR(sym, ch)                                                                              \
    namespace csp::collectives {                                                                                  \
    template <class T, class Op, class U>                                                                         \
        requires spells<Op, ch> && detail::local_value<U, T>                                                      \
    lazy<T, Op> operator sym(const shared<T, Op>& x, const U& a) { return lazy_builder<T, Op, ch>::make(x, a); } \
    template <class T, class Op, class U>                                                                         \
        requires spells<Op, ch> && detail::local_value<U, T>                                                      \
    lazy<T, Op> operator sym(const U& a, const shared<T, Op>& x) { return lazy_builder<T, Op, ch>::make(a, x); } \
    template <class T, class Op, class U>                                                                         \
        requires spells<Op, ch> && detail::local_value<U, T>                                                      \
    lazy<T, Op> operator sym(const lazy<T, Op>& x, const U& a) { return lazy_builder<T, Op, ch>::make(x, a); }   \
    template <class T, class Op, class U>                                                                         \
        requires spells<Op, ch> && detail::local_value<U, T>                                                      \
    lazy<T, Op> operator sym(const U& a, const lazy<T, Op>& x) { return lazy_builder<T, Op, ch>::make(a, x); }   \
    template <class T, class Op>                                                                                  \
        requires spells<Op, ch>                                                                                   \
    lazy<T, Op> operator sym(const shared<T, Op>& x, const shared<T, Op>& y) {                                    \
        return lazy_builder<T, Op, ch>::make(x, y);                                                               \
    }                                                                                                             \
    template <class T, class Op>                                                                                  \
        requires spells<Op, ch>                                                                                   \
    lazy<T, Op> operator sym(const lazy<T, Op>& x, const shared<T, Op>& y) {                                      \
        return lazy_builder<T, Op, ch>::make(x, y);                                                               \
    }                                                                                                             \
    template <class T, class Op>                                                                                  \
        requires spells<Op, ch>                                                                                   \
    lazy<T, Op> operator sym(const shared<T, Op>& x, const lazy<T, Op>& y) {                                      \
        return lazy_builder<T, Op, ch>::make(x, y);                                                               \
    }                                                                                                             \
    template <class T, class Op>                                                                                  \
        requires spells<Op, ch>                                                                                   \
    lazy<T, Op> operator sym(const lazy<T, Op>& x, const lazy<T, Op>& y) {                                        \
        return lazy_builder<T, Op, ch>::make(x, y);                                                               \
    }                                                                                                             \
    template <class T, class Op, class B>                                                                         \
        requires spells<Op, ch> && (detail::local_value<B, T> || std::is_same_v<B, shared<T, Op>> ||              \
                                    std::is_same_v<B, lazy<T, Op>>)                                               \
    shared<T, Op>& operator sym##=(shared<T, Op>& x, const B& b) {                                                \
        return lazy_builder<T, Op, ch>::compound(x, b);                                                           \
    }                                                                                                             \
    }

CSP_SHARED_OPERATOR(+, '+')
CSP_SHARED_OPERATOR(-, '-')
CSP_SHARED_OPERATOR(*, '*')
CSP_SHARED_OPERATOR(&, '&')
CSP_SHARED_OPERATOR(|, '|')
CSP_SHARED_OPERATOR(^, '^')
#undef CSP_SHARED_OPERATOR
