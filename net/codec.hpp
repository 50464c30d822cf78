#pragma once
// How a value becomes a payload and back. Both ends pick the encoding from
// the type alone, so a sender and a receiver that agree on the type agree on
// the bytes:
//
//   trivially copyable T (int, double, a POD struct)   its bytes
//   std::vector<U>, U trivially copyable               the elements' bytes;
//                                                      an rvalue is adopted, not copied
//   std::string                                        its characters
//   anything else cereal can serialise                 cereal's binary archive
//   csp::net::payload                                  itself (forwarding without a copy)
//   a view: std::span<E>, std::string_view             the data it views, received as
//                                                      std::vector<E>, std::string (csp/view.hpp)
//   csp::net::lent<E> (loans.hpp)                      like a span, its bytes borrowed, not copied
//   a pointer                                          refused at compile time
//   a struct with a pointer or view among its fields   refused at compile time
//                                                      (csp/address_fields.hpp)
//   anything else (a struct holding a std::string      refused at compile time, saying
//   with no serialize function)                        what would make it sendable
//
// A payload whose size cannot be a T (a 12-byte message read as a double,
// or cereal running out of bytes) throws decode_error.
#include <cstdlib>
#include <cstring>
#include <istream>
#include <memory>
#include <ostream>
#include <span>
#include <streambuf>
#include <string>
#include <type_traits>
#include <vector>

#include <cereal/archives/binary.hpp>
#include <cereal/types/array.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/optional.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/tuple.hpp>
#include <cereal/types/vector.hpp>

#include "csp/address_fields.hpp"
#include "csp/view.hpp"
#include "net/errors.hpp"
#include "net/lent.hpp"
#include "net/payload.hpp"
#include "net/type_fingerprint.hpp"

namespace csp::net {

template <class T>
inline constexpr bool is_raw_v = std::is_trivially_copyable_v<T> && !std::is_pointer_v<T>;

template <class T> struct raw_sequence : std::false_type {};
template <class U, class A>
struct raw_sequence<std::vector<U, A>> : std::bool_constant<is_raw_v<U> && !std::is_same_v<U, bool>> {
    using element = U;
};
template <> struct raw_sequence<std::string> : std::true_type {
    using element = char;
};

// Whether cereal's binary archive can write (read) a T: there is exactly
// one serialize (or save/load) function for it.
template <class T>
inline constexpr bool cereal_writes_v = cereal::traits::is_output_serializable<T, cereal::BinaryOutputArchive>::value;
template <class T>
inline constexpr bool cereal_reads_v = cereal::traits::is_input_serializable<T, cereal::BinaryInputArchive>::value;

namespace detail {

// cereal writes to a std::ostream; this one appends to a vector it owns.
class vector_sink final : public std::streambuf {
public:
    std::vector<char>& bytes() { return bytes_; }

protected:
    int_type overflow(int_type c) override {
        if (c != traits_type::eof()) bytes_.push_back(static_cast<char>(c));
        return c;
    }
    std::streamsize xsputn(const char* s, std::streamsize n) override {
        bytes_.insert(bytes_.end(), s, s + n);
        return n;
    }

private:
    std::vector<char> bytes_;
};

// ... and reads from a std::istream; this one reads a payload in place.
class memory_source final : public std::streambuf {
public:
    memory_source(const std::byte* p, std::size_t n) {
        char* b = const_cast<char*>(reinterpret_cast<const char*>(p));
        setg(b, b, b + n);
    }
};

template <class>
inline constexpr bool never = false;

// Instantiated only for a type the codec has no encoding for: refuses it at
// compile time, before cereal's own assertion deep in its archive says so
// less plainly.
template <class T>
[[noreturn]] void no_encoding() {
    static_assert(never<T>,
                  "csp: this type has no encoding: it is not trivially copyable, nor a std::vector of such, nor a "
                  "std::string, and cereal finds no serialize function for it. Give it one (template <class "
                  "Archive> void serialize(Archive& a) { a(x, y); }), or include cereal's header for the standard "
                  "container it is (<cereal/types/list.hpp>, ...).");
    std::abort();
}

// A struct's bytes travel only if they carry no address
// (csp/address_fields.hpp): V itself when it is sent as its bytes, its
// elements when it is a sequence of them. cereal refuses pointers itself.
template <class V>
constexpr void check_fields() {
    if constexpr (raw_sequence<V>::value) check_bytes_travel<typename raw_sequence<V>::element>();
    else if constexpr (is_raw_v<V>) check_bytes_travel<V>();
}

[[noreturn]] inline void size_mismatch(std::size_t got, const std::string& type, const std::string& want) {
    throw decode_error("a payload of " + std::to_string(got) + " bytes cannot be a " + type + " (" + want + ")");
}

}  // namespace detail

// The fingerprint a value of type T travels with: 0 for a payload (bytes
// forwarded as they are), T's own otherwise.
template <class T>
std::uint32_t wire_type() {
    using V = std::remove_cvref_t<T>;
    if constexpr (std::is_same_v<V, payload>) return 0;
    else return type_fingerprint<sent_type_t<V>>();
}

template <class T>
payload encode(T&& value) {
    using V = std::remove_cvref_t<T>;
    check_sendable<V>();
    detail::check_fields<sent_type_t<V>>();
    if constexpr (is_lent_v<V>) {
        return value.bytes();
    } else if constexpr (is_view_v<V>) {
        // The viewed data, as its owning type would be encoded; raw elements
        // straight from the view, without building the owner first.
        using O = sent_type_t<V>;
        if constexpr (raw_sequence<O>::value) {
            using E = typename raw_sequence<O>::element;
            std::byte* out;
            const std::size_t bytes = value.size() * sizeof(E);
            payload p = payload::allocate(bytes, out);
            if (bytes) std::memcpy(out, value.data(), bytes);
            return p;
        } else {
            return encode(O(value.begin(), value.end()));
        }
    } else if constexpr (std::is_same_v<V, payload>) {
        return value;  // already bytes: forwarded as they are, shared, not copied
    } else if constexpr (raw_sequence<V>::value) {
        using E = typename raw_sequence<V>::element;
        if constexpr (std::is_rvalue_reference_v<T&&> && !std::is_const_v<std::remove_reference_t<T>>) {
            auto owner = std::make_shared<V>(std::move(value));
            return payload::adopt(owner, owner->data(), owner->size() * sizeof(E));
        } else {
            std::byte* out;
            payload p = payload::allocate(value.size() * sizeof(E), out);
            if (p.size()) std::memcpy(out, value.data(), p.size());
            return p;
        }
    } else if constexpr (is_raw_v<V>) {
        std::byte* out;
        payload p = payload::allocate(sizeof(V), out);
        std::memcpy(out, &value, sizeof(V));
        return p;
    } else if constexpr (!cereal_writes_v<V>) {
        detail::no_encoding<V>();
    } else {
        auto sink = std::make_shared<detail::vector_sink>();
        {
            std::ostream os(sink.get());
            cereal::BinaryOutputArchive archive(os);
            archive(value);
        }
        auto& bytes = sink->bytes();
        return payload::adopt(sink, bytes.data(), bytes.size());
    }
}

template <class T>
T decode(const payload& p) {
    using V = std::remove_cvref_t<T>;
    check_receivable<V>();
    detail::check_fields<V>();
    if constexpr (std::is_same_v<V, payload>) {
        return p;
    } else if constexpr (raw_sequence<V>::value) {
        using E = typename raw_sequence<V>::element;
        if (p.size() % sizeof(E) != 0)
            detail::size_mismatch(p.size(), type_name<V>(),
                                  "not a multiple of the element size " + std::to_string(sizeof(E)));
        V out;
        out.resize(p.size() / sizeof(E));
        if (p.size()) std::memcpy(out.data(), p.data(), p.size());
        return out;
    } else if constexpr (is_raw_v<V>) {
        if (p.size() != sizeof(V))
            detail::size_mismatch(p.size(), type_name<V>(), "which has " + std::to_string(sizeof(V)) + " bytes");
        V out;
        std::memcpy(&out, p.data(), sizeof(V));
        return out;
    } else if constexpr (!cereal_reads_v<V>) {
        detail::no_encoding<V>();
    } else {
        detail::memory_source src(p.data(), p.size());
        std::istream is(&src);
        V out{};
        try {
            cereal::BinaryInputArchive archive(is);
            archive(out);
        } catch (const cereal::Exception& e) {
            throw decode_error("a payload of " + std::to_string(p.size()) + " bytes does not decode as a " +
                               type_name<V>() + ": " + e.what());
        }
        if (is.rdbuf()->in_avail() != 0)
            throw decode_error("a payload of " + std::to_string(p.size()) + " bytes decodes as a " +
                               type_name<V>() + " with " + std::to_string(is.rdbuf()->in_avail()) +
                               " bytes left over");
        return out;
    }
}

// The payload's elements in place, without a copy (U trivially copyable).
template <class U>
    requires is_raw_v<U>
std::span<const U> view(const payload& p) {
    check_bytes_travel<U>();
    if (p.size() % sizeof(U) != 0)
        detail::size_mismatch(p.size(), "span of " + type_name<U>(),
                              "not a multiple of the element size " + std::to_string(sizeof(U)));
    return {reinterpret_cast<const U*>(p.data()), p.size() / sizeof(U)};
}

}  // namespace csp::net
