#pragma once
// The handshake's frames checked field by field (handshake.hpp has the
// protocol). Pure functions, no IO, so a fuzzer can drive them alone.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "net/auth.hpp"
#include "net/frame.hpp"

namespace csp::net::detail {

// Why an acceptor refuses a connection: sent back in a refuse frame and logged.
class refusal : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct hello_message {
    std::uint32_t rank;  // 0 <= rank < size, not the acceptor's
    nonce connector_nonce;
    link_limits limits;
};

inline constexpr std::size_t limits_size = 8;

// Limits on the wire (frame.hpp), and back; a limit of 0 is refused.
std::string limits_bytes(const link_limits& l);
link_limits take_limits(const std::string& body, std::size_t at);

// A hello, as the acceptor (rank `self` of `job`, `size` nodes; 0: unknown)
// must see it. Throws refusal naming the first thing wrong.
hello_message check_hello(const header& h, const std::string& body, const std::string& job, int self, int size);

// The connector's proof frame, after its hello from `hello_rank`. Throws refusal.
proof check_proof_frame(const header& h, const std::string& body, std::uint32_t hello_rank);

struct challenge_message {
    nonce acceptor_nonce;
    proof acceptor_proof;
    link_limits limits;
};

// The acceptor's challenge as the connector to `peer` must see it. Throws
// refusal naming what is wrong (the connector reports it as a net_error).
challenge_message check_challenge(const header& h, const std::string& body, int peer);

}  // namespace csp::net::detail
