#pragma once
// One message as a port delivers it: who sent it, where to, its tag and its
// bytes. Decoding is the receiver's choice of type (codec.hpp).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "net/codec.hpp"
#include "net/errors.hpp"
#include "net/payload.hpp"
#include "net/port_id.hpp"
#include "net/type_fingerprint.hpp"

namespace csp::net {

struct message {
    int source = -1;      // rank of the sending node
    port_id port = 0;     // the port it was sent to
    std::uint64_t tag = 0;
    payload body;
    std::uint32_t type = 0;  // the sent value's type (type_fingerprint.hpp); 0: untyped

    // The value, if it was sent as a T (or as untyped bytes); decode_error
    // naming both types if it was sent as another type.
    template <class T>
    T as() const {
        expect_type<T>();
        return decode<T>(body);
    }
    // The check as() makes before it decodes: decode_error naming both
    // types unless the message was sent as a T (or untyped).
    template <class T>
    void expect_type() const {
        if constexpr (!std::is_same_v<std::remove_cvref_t<T>, payload>) {
            if (type != 0 && type != type_fingerprint<T>())
                throw decode_error("a message sent as " + type_name_of(type) + " (from node " +
                                   std::to_string(source) + " to " + port_text(port) +
                                   ") cannot be received as " + type_name<std::remove_cvref_t<T>>());
        }
    }

    // The payload as elements of U, in place (no copy).
    template <class U>
    std::span<const U> view() const { return net::view<U>(body); }

    // The elements of a value sent as a std::vector<E> (or a std::span of
    // E), where they arrived: no copy, valid while this message lives.
    // decode_error if it was sent as another type.
    template <class E>
        requires is_raw_v<E>
    std::span<const E> elements() const {
        using V = std::vector<E>;
        if (type != 0 && type != type_fingerprint<V>())
            throw decode_error("a message sent as " + type_name_of(type) + " (from node " + std::to_string(source) +
                               " to " + port_text(port) + ") cannot be received as elements of " +
                               type_name<E>() + ": that takes a " + type_name<V>() + " or a span of them");
        return net::view<E>(body);
    }

    // The same copied into the caller's buffer: no allocation. Returns how
    // many elements came; decode_error also if more came than fit.
    template <class E>
        requires is_raw_v<E>
    std::size_t into(std::span<E> out) const {
        const auto in = elements<std::remove_cv_t<E>>();
        if (in.size() > out.size())
            throw decode_error("a message of " + std::to_string(in.size()) + " " + type_name<std::remove_cv_t<E>>() +
                               " (from node " + std::to_string(source) + " to " + port_text(port) +
                               ") does not fit a buffer of " + std::to_string(out.size()));
        // Already there when it landed in `out` (landing.hpp).
        if (!in.empty() && static_cast<const void*>(in.data()) != static_cast<const void*>(out.data()))
            std::memcpy(out.data(), in.data(), in.size_bytes());
        return in.size();
    }

    std::size_t size() const noexcept { return body.size(); }

    // Set when this entry reports a peer's failure instead of carrying data;
    // ports throw it (port.hpp).
    std::shared_ptr<const peer_error> failure;

    // The sender's number for it (frame.hpp), for timelines; 0 if the
    // sender was not observed.
    std::uint16_t sequence = 0;
};

}  // namespace csp::net
