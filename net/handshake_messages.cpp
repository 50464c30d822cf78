#include "net/handshake_messages.hpp"

#include <cstring>

#include "net/little_endian.hpp"

namespace csp::net::detail {
namespace {

template <std::size_t N>
std::array<std::byte, N> take_bytes(const std::string& body, std::size_t at) {
    std::array<std::byte, N> out;
    std::memcpy(out.data(), body.data() + at, N);
    return out;
}

}  // namespace

std::string limits_bytes(const link_limits& l) {
    std::string out(limits_size, '\0');
    auto* at = reinterpret_cast<std::byte*>(out.data());
    put<std::uint32_t>(at, l.max_frame);
    put<std::uint32_t>(at + 4, l.window);
    return out;
}

link_limits take_limits(const std::string& body, std::size_t at) {
    const auto* in = reinterpret_cast<const std::byte*>(body.data()) + at;
    const link_limits l{get<std::uint32_t>(in), get<std::uint32_t>(in + 4)};
    if (l.window == 0) throw refusal("malformed limits: a window of 0 bytes");
    return l;
}

hello_message check_hello(const header& h, const std::string& body, const std::string& job, int self, int size) {
    if (h.op != opcode::hello) throw refusal(std::string("expected a hello frame, got ") + describe(h.op));
    if (body.size() < nonce_size + limits_size)
        throw refusal("malformed hello: " + std::to_string(body.size()) + " bytes, less than its " +
                      std::to_string(nonce_size + limits_size) + " bytes of nonce and limits");
    const std::string claimed_job = body.substr(nonce_size + limits_size);
    if (claimed_job != job) throw refusal("it belongs to job '" + claimed_job + "', not '" + job + "'");
    // Checked as unsigned: a rank of -1 on the wire is 0xFFFFFFFF.
    if (h.source == static_cast<std::uint32_t>(self) || (size > 0 && h.source >= static_cast<std::uint32_t>(size)) ||
        h.source > 0x7fffffffu)
        throw refusal("it claims rank " + std::to_string(h.source) + ", which is not a peer of node " +
                      std::to_string(self) + " in a job of " + std::to_string(size));
    return {h.source, take_bytes<nonce_size>(body, 0), take_limits(body, nonce_size)};
}

proof check_proof_frame(const header& h, const std::string& body, std::uint32_t hello_rank) {
    if (h.op != opcode::proof) throw refusal(std::string("expected a proof frame, got ") + describe(h.op));
    if (h.source != hello_rank)
        throw refusal("its proof claims rank " + std::to_string(h.source) + ", its hello rank " +
                      std::to_string(hello_rank));
    if (body.size() != proof_size)
        throw refusal("malformed proof: " + std::to_string(body.size()) + " bytes, not " + std::to_string(proof_size));
    return take_bytes<proof_size>(body, 0);
}

challenge_message check_challenge(const header& h, const std::string& body, int peer) {
    if (h.op != opcode::challenge) throw refusal(std::string("expected challenge, got ") + describe(h.op));
    if (h.source != static_cast<std::uint32_t>(peer)) throw refusal("answered by node " + std::to_string(h.source));
    if (body.size() != nonce_size + proof_size + limits_size)
        throw refusal("malformed challenge of " + std::to_string(body.size()) + " bytes");
    return {take_bytes<nonce_size>(body, 0), take_bytes<proof_size>(body, nonce_size),
            take_limits(body, nonce_size + proof_size)};
}

}  // namespace csp::net::detail
