#pragma once
// Which type a message was sent as. Every data frame carries a 32-bit
// fingerprint of the sent value's type, so that receive<T> of another type
// fails with a decode_error naming both types instead of reading the bytes
// as something they are not (four floats as two doubles). Untyped bytes (a
// forwarded payload) carry 0, and raw access (message::body, view<U>) never
// checks: reading bytes as another type stays possible on purpose.
//
// The fingerprint hashes the type's ABI name and its size, so it is the same
// in every process built by a compiler of the common C++ ABI (GCC, Clang).
// Every type a program sends or receives is registered under its
// fingerprint when the program starts, so an error can name the sender's
// type when the receiver's program knows it (always, in an SPMD job).
#include <cstdint>
#include <string>
#include <type_traits>
#include <typeinfo>

#include "csp/type_name.hpp"

namespace csp::net {

namespace detail {

std::uint32_t fingerprint_of(const char* abi_name, std::size_t size) noexcept;
// Records fp's readable name; returns fp.
std::uint32_t register_type(std::uint32_t fp, const std::type_info& t);

template <class T>
std::uint32_t registered_fingerprint() {
    static const std::uint32_t fp = register_type(fingerprint_of(typeid(T).name(), sizeof(T)), typeid(T));
    return fp;
}

// Instantiated (and so initialised when the program starts) for every type
// that reaches type_fingerprint.
template <class T>
inline const std::uint32_t at_start = registered_fingerprint<T>();

}  // namespace detail

using csp::type_name;  // readable names (csp/type_name.hpp)

template <class T>
std::uint32_t type_fingerprint() {
    using V = std::remove_cvref_t<T>;
    (void)&detail::at_start<V>;
    return detail::registered_fingerprint<V>();
}

// The readable name of the type with this fingerprint, or a description of
// an unknown one.
std::string type_name_of(std::uint32_t fingerprint);

}  // namespace csp::net
