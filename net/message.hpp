#pragma once
// One message as a port delivers it: who sent it, where to, its tag and its
// bytes. Decoding is the receiver's choice of type (codec.hpp).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "net/codec.hpp"
#include "net/errors.hpp"
#include "net/payload.hpp"

namespace csp::net {

using port_id = std::uint32_t;

struct message {
    int source = -1;      // rank of the sending node
    port_id port = 0;     // the port it was sent to
    std::uint64_t tag = 0;
    payload body;

    template <class T>
    T as() const { return decode<T>(body); }

    // The payload as elements of U, in place (no copy).
    template <class U>
    std::span<const U> view() const { return net::view<U>(body); }

    std::size_t size() const noexcept { return body.size(); }

    // Set when this entry reports a peer's failure instead of carrying data;
    // ports throw it (port.hpp).
    std::shared_ptr<const peer_error> failure;
};

}  // namespace csp::net
