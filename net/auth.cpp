#include "net/auth.hpp"

#include <sodium.h>

#include <stdexcept>

#include "net/little_endian.hpp"

namespace csp::net::detail {
namespace {

void ensure_sodium() {
    // sodium_init is idempotent and thread-safe; a negative answer means no
    // usable random source, which no handshake can do without.
    static const int ready = sodium_init();
    if (ready < 0) throw std::runtime_error("libsodium could not be initialised (no random source)");
}

void absorb(crypto_auth_hmacsha256_state& s, const void* p, std::size_t n) {
    crypto_auth_hmacsha256_update(&s, static_cast<const unsigned char*>(p), n);
}

void absorb_u32(crypto_auth_hmacsha256_state& s, std::uint32_t v) {
    std::byte le[4];
    put<std::uint32_t>(le, v);
    absorb(s, le, sizeof le);
}

}  // namespace

nonce fresh_nonce() {
    ensure_sodium();
    nonce n;
    randombytes_buf(n.data(), n.size());
    return n;
}

proof prove(role who, std::string_view token, const handshake_context& c) {
    ensure_sodium();
    static_assert(proof_size == crypto_auth_hmacsha256_BYTES);
    crypto_auth_hmacsha256_state s;
    crypto_auth_hmacsha256_init(&s, reinterpret_cast<const unsigned char*>(token.data()), token.size());
    static constexpr char label[] = "csp-net link handshake v3";
    absorb(s, label, sizeof label);
    const auto r = static_cast<unsigned char>(who);
    absorb(s, &r, 1);
    // The job is length-prefixed so that no two (job, rest) pairs share bytes.
    absorb_u32(s, static_cast<std::uint32_t>(c.job.size()));
    absorb(s, c.job.data(), c.job.size());
    absorb_u32(s, c.connector_rank);
    absorb_u32(s, c.acceptor_rank);
    absorb(s, c.connector_nonce.data(), c.connector_nonce.size());
    absorb(s, c.acceptor_nonce.data(), c.acceptor_nonce.size());
    for (const link_limits& l : {c.connector_limits, c.acceptor_limits}) {
        absorb_u32(s, l.max_frame);
        absorb_u32(s, l.window);
    }
    proof out;
    crypto_auth_hmacsha256_final(&s, reinterpret_cast<unsigned char*>(out.data()));
    sodium_memzero(&s, sizeof s);
    return out;
}

bool proofs_match(const proof& expected, const proof& got) noexcept {
    return crypto_verify_32(reinterpret_cast<const unsigned char*>(expected.data()),
                            reinterpret_cast<const unsigned char*>(got.data())) == 0;
}

}  // namespace csp::net::detail
