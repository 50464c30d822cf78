#pragma once
// Views: values that refer to data they do not own.
//
// A std::span or std::string_view is trivially copyable, so copying its
// bytes copies an address and a length; on another node (or after the
// sender reuses its buffer) they point at nothing. Every send that may
// leave the sender's hands (a port, a communicator) therefore sends a view
// as the data it views, and the receiver takes the owning type:
//
//   std::span<const double>  -> std::vector<double>
//   std::string_view         -> std::string
//
//   node.send(to, port, std::span(row));                 // the row's doubles
//   auto row = in.receive<std::vector<double>>();        // not a span
//
// Receiving a view, or sending an address (a pointer, a member pointer, or
// a type declared a view below without an owning type), is a compile-time
// error that says why.
//
// A struct with public fields that holds a pointer, a reference or a view
// among them is refused where its bytes would travel
// (csp/address_fields.hpp). A class whose fields are hidden (private, or
// behind constructors) cannot be looked into; declare it so sends refuse
// it:
//
//   template <> struct csp::is_view<my_slice> : std::true_type {};
//
// and, to have it sent as data, name what it is sent as:
//
//   template <> struct csp::owning<my_slice> { using type = std::vector<float>; };
//
// where std::vector<float>(slice.begin(), slice.end()) must build it.
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace csp {

template <class T> struct is_view : std::false_type {};
template <class E, std::size_t N> struct is_view<std::span<E, N>> : std::true_type {};
template <class C, class Tr> struct is_view<std::basic_string_view<C, Tr>> : std::true_type {};

// What a view is sent as; `void` for a view that has no owning type.
template <class T> struct owning { using type = void; };
template <class E, std::size_t N> struct owning<std::span<E, N>> { using type = std::vector<std::remove_cv_t<E>>; };
template <class C, class Tr> struct owning<std::basic_string_view<C, Tr>> { using type = std::basic_string<C, Tr>; };

template <class T>
inline constexpr bool is_view_v = is_view<std::remove_cvref_t<T>>::value;

// An address alone: meaningless to anyone but its owner.
template <class T>
inline constexpr bool is_address_v = std::is_pointer_v<std::remove_cvref_t<T>> ||
                                     std::is_member_pointer_v<std::remove_cvref_t<T>> ||
                                     (is_view_v<T> && std::is_void_v<typename owning<std::remove_cvref_t<T>>::type>);

// The type a send of a T delivers: T itself, or the owning type of a view.
template <class T>
using sent_type_t =
    std::conditional_t<is_view_v<T>, typename owning<std::remove_cvref_t<T>>::type, std::remove_cvref_t<T>>;

// Refuse, at compile time, a T that cannot travel (sent) or be delivered
// (received).
template <class T>
constexpr void check_sendable() {
    static_assert(!is_address_v<T>,
                  "csp: this value is an address (a pointer, or a type declared csp::is_view with no "
                  "csp::owning type): its bytes mean nothing to the receiver. Send the data it points to "
                  "(a std::vector, or a std::span of it, which is sent as a std::vector).");
}
template <class T>
constexpr void check_receivable() {
    static_assert(!is_view_v<T> && !is_address_v<T>,
                  "csp: a view (std::span, std::string_view, a csp::is_view type) cannot be received: it would "
                  "point into a message that is gone. Receive its owning type (std::vector<E>, std::string), "
                  "or receive into a buffer of yours with receive_into.");
}

// The data a view views, as its owning type; anything else as it is.
template <class T>
decltype(auto) owned(T&& value) {
    check_sendable<T>();
    if constexpr (is_view_v<T>) return sent_type_t<T>(value.begin(), value.end());
    else return std::forward<T>(value);
}

}  // namespace csp
