#pragma once
// The proofs of the link handshake (handshake.hpp): each side shows it knows
// the job's token without sending it, by an HMAC-SHA-256 keyed with the token
// over everything that identifies this one connection: the job, both ranks, a
// fresh random nonce from each side, and both sides' limits. A recorded proof
// is useless on any other connection, because the other side's nonce differs;
// the two roles are told apart inside the MAC, so one side's proof cannot be
// reflected back as the other's.
//
// libsodium does the cryptography (random nonces, HMAC, constant-time
// comparison); nothing here computes a hash itself.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace csp::net::detail {

inline constexpr std::size_t nonce_size = 32;
inline constexpr std::size_t proof_size = 32;
using nonce = std::array<std::byte, nonce_size>;
using proof = std::array<std::byte, proof_size>;

// Who computes the proof: the side that connected or the side that accepted.
enum class role : std::uint8_t { connector = 1, acceptor = 2 };

// What a node tells its peer in the handshake about how it may be sent to
// and how it sends (frame.hpp).
struct link_limits {
    std::uint32_t max_frame = 0;  // the largest payload it accepts
    std::uint32_t window = 0;     // bytes it keeps in flight to one peer (flow_control.hpp)
};

// What a proof covers.
struct handshake_context {
    std::string_view job;
    std::uint32_t connector_rank;
    std::uint32_t acceptor_rank;
    nonce connector_nonce;
    nonce acceptor_nonce;
    link_limits connector_limits;
    link_limits acceptor_limits;
};

// A nonce from the operating system's random source.
nonce fresh_nonce();

proof prove(role who, std::string_view token, const handshake_context& c);

// Compares in constant time, so timing tells a guesser nothing.
bool proofs_match(const proof& expected, const proof& got) noexcept;

}  // namespace csp::net::detail
