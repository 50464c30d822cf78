#pragma once
// Fixed-width integers in little-endian byte order, the order of everything
// on the wire (frame.hpp) and inside the handshake's proofs (auth.hpp).
#include <bit>
#include <cstddef>
#include <cstring>

namespace csp::net::detail {

// Host order to little-endian and back (the same swap either way).
template <class U>
U little(U v) noexcept {
    if constexpr (std::endian::native == std::endian::little || sizeof(U) == 1) return v;
    else if constexpr (sizeof(U) == 2) return __builtin_bswap16(v);
    else if constexpr (sizeof(U) == 4) return __builtin_bswap32(v);
    else return __builtin_bswap64(v);
}

template <class U>
void put(std::byte* out, U v) noexcept {
    v = little(v);
    std::memcpy(out, &v, sizeof v);
}

template <class U>
U get(const std::byte* in) noexcept {
    U v;
    std::memcpy(&v, in, sizeof v);
    return little(v);
}

}  // namespace csp::net::detail
