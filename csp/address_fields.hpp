#pragma once
// Structs whose bytes carry an address.
//
// A trivially copyable struct travels between nodes as its bytes (net/
// codec.hpp). If one of its fields is a pointer, a member pointer or a view
// (std::span, std::string_view, a type declared csp::is_view), those bytes
// carry an address that means nothing to the receiver:
//
//   struct slice { double* first; std::size_t count; };
//   node.send(to, port, slice{row.data(), row.size()});   // does not compile
//
// holds_address_v<T> finds such fields in an aggregate (a struct with public
// fields and no constructors, nested aggregates, arrays and std::array of
// them, std::optional, std::pair and std::tuple), and the codec refuses to
// send or receive it. C++20 has no reflection; an aggregate's fields are
// found by aggregate initialisation instead:
//
//   - leaf: converts to any field type but an aggregate (and not to an
//     array, which no conversion can make), so in T{leaf, leaf, ...} brace
//     elision descends into every nested aggregate and array, and each leaf
//     initialises one scalar (or non-aggregate) field. The largest n for
//     which T{leaf x n} is well-formed is the number of such fields. (The
//     smallest is 1, or one past the last reference field: a reference
//     cannot be left out. The count starts from the smallest.)
//   - non_address_leaf: the same, but converts to no address, no view and
//     no reference. T{non_address_leaf x n} is well-formed iff none of the
//     n fields is one. A reference field is an address too (its bytes are
//     the referent's), and is told from a value field by how a conversion
//     binds to it: the leaf yields only an xvalue of a non-const type, which
//     initialises a value field (const or not) but cannot bind a non-const
//     lvalue reference; and a const lvalue reference binds directly to the
//     leaf's deleted conversion to `const U&`, chosen before any temporary
//     is considered.
//
// What cannot be seen is let through, never refused: a class with
// constructors or private fields (it is not an aggregate; its own fields
// are hidden), an aggregate of more than max_examined fields (arrays
// counted element by element), an rvalue reference field, a reference field
// past the first first_examined fields, a non-const reference to an
// aggregate (no leaf binds to it), and an aggregate whose fields cannot be
// counted (one before the last cannot be value-initialised). Unions and
// empty structs are single fields. A type whose bytes do mean the same at
// the receiver (a pointer used only as a token handed back to its sender)
// is declared so:
//
//   template <> struct csp::sent_as_bytes<my_cookie> : std::true_type {};
#include <array>
#include <cstddef>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "csp/view.hpp"

namespace csp {

template <class T> struct sent_as_bytes : std::false_type {};

namespace detail::address_fields {

// Aggregates of more leaf fields than this are not examined: each count
// instantiates initialiser lists of that length.
inline constexpr std::size_t max_examined = 1024;
// T{leaf x n} is tried for n = 1, 2, ... up to this many until one is
// well-formed (a reference field is initialised): a linear search, as the
// first well-formed count may be any number.
inline constexpr std::size_t first_examined = 64;

template <class U>
inline constexpr bool is_address_field =
    std::is_pointer_v<U> || std::is_member_pointer_v<U> || is_view<std::remove_cv_t<U>>::value;

// A field type initialised as a whole by one leaf: anything but an
// aggregate into which brace elision should descend.
template <class U>
inline constexpr bool whole_field = !std::is_aggregate_v<U> || std::is_union_v<U> || std::is_empty_v<U> ||
                                    sent_as_bytes<std::remove_cv_t<U>>::value;

struct leaf {
    template <class U>
        requires whole_field<U>
    operator U&() const noexcept;
    // A const reference to an aggregate, bound whole. U is deduced const
    // only for such a field: an aggregate value field (const or not, where
    // brace elision must descend) deduces U without its const.
    template <class U>
        requires(!whole_field<U>) && std::is_const_v<U>
    operator U&() const noexcept;
};

struct non_address_leaf {
    template <class U>
        requires whole_field<U> && (!is_address_field<U>) && (!std::is_const_v<U>)
    operator U&&() const noexcept;
    // Deduced as const only for a const lvalue reference field: the value
    // fields' deduction drops their const.
    template <class U>
        requires std::is_const_v<U>
    operator U&() const noexcept = delete;
};

template <class T, class Leaf, std::size_t... I>
constexpr bool takes(std::index_sequence<I...>) {
    return requires { T{((void)I, Leaf{})...}; };
}
template <class T, class Leaf, std::size_t N>
constexpr bool takes_n() {
    return takes<T, Leaf>(std::make_index_sequence<N>{});
}

// The largest n <= max_examined for which T{leaf x n} is well-formed,
// found by doubling then halving, or 0 if none was (or the count exceeds
// max_examined, told by `over`).
template <class T, std::size_t Lo, std::size_t Hi>
constexpr std::size_t last_taken() {  // takes(Lo), !takes(Hi)
    if constexpr (Hi - Lo <= 1) return Lo;
    else if constexpr (takes_n<T, leaf, (Lo + Hi) / 2>()) return last_taken<T, (Lo + Hi) / 2, Hi>();
    else return last_taken<T, Lo, (Lo + Hi) / 2>();
}
// The smallest n in [N, first_examined] for which T{leaf x n} is
// well-formed, or 0.
template <class T, std::size_t N = 1>
constexpr std::size_t first_taken() {
    if constexpr (N > first_examined) return 0;
    else if constexpr (takes_n<T, leaf, N>()) return N;
    else return first_taken<T, N + 1>();
}
// From a well-formed N, the largest (doubling, then halving), or 0 if it
// passes max_examined.
template <class T, std::size_t N>
constexpr std::size_t count_up() {
    if constexpr (2 * N > max_examined) return 0;  // too many to examine
    else if constexpr (takes_n<T, leaf, 2 * N>()) return count_up<T, 2 * N>();
    else return last_taken<T, N, 2 * N>();
}
template <class T>
constexpr std::size_t leaf_count() {
    constexpr std::size_t first = first_taken<T>();
    if constexpr (first == 0) return 0;
    else return count_up<T, first>();
}

template <class T>
constexpr bool aggregate_holds_address() {
    constexpr std::size_t n = leaf_count<T>();
    if constexpr (n == 0) return false;
    else return !takes_n<T, non_address_leaf, n>();
}

template <class T> struct holds : std::bool_constant<is_address_field<T>> {};
template <class T> struct holds<T&> : std::true_type {};
template <class T> struct holds<T&&> : std::true_type {};

}  // namespace detail::address_fields

// Whether T's bytes carry an address (above): T is one (a reference too),
// or an aggregate, array, std::array, optional, pair or tuple with one among
// its fields, unless declared sent_as_bytes.
template <class T>
inline constexpr bool holds_address_v = detail::address_fields::holds<std::remove_cv_t<T>>::value;

namespace detail::address_fields {

template <class T>
    requires std::is_class_v<T> && std::is_aggregate_v<T> && (!std::is_union_v<T>) && (!std::is_empty_v<T>)
struct holds<T> : std::bool_constant<!sent_as_bytes<T>::value && aggregate_holds_address<T>()> {};
template <class E, std::size_t N> struct holds<E[N]> : std::bool_constant<holds_address_v<E>> {};
template <class E, std::size_t N> struct holds<std::array<E, N>> : std::bool_constant<holds_address_v<E>> {};
template <class E> struct holds<std::optional<E>> : std::bool_constant<holds_address_v<E>> {};
template <class A, class B>
struct holds<std::pair<A, B>> : std::bool_constant<holds_address_v<A> || holds_address_v<B>> {};
template <class... E> struct holds<std::tuple<E...>> : std::bool_constant<(holds_address_v<E> || ...)> {};

}  // namespace detail::address_fields

// Refuse, at compile time, a T whose bytes are about to travel (or be
// read from a message) when they carry an address.
template <class T>
constexpr void check_bytes_travel() {
    static_assert(
        !holds_address_v<T>,
        "csp: this struct holds a pointer, a reference or a view (std::span, std::string_view) among its fields: "
        "sent as its bytes, it would carry an address that means nothing to the receiver. Send the "
        "data it points to (hold it in a std::vector and give the struct a serialize function), or, "
        "if the address is only a token the receiver hands back, declare it: template <> struct "
        "csp::sent_as_bytes<T> : std::true_type {};");
}

}  // namespace csp
