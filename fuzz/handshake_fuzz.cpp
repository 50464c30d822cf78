// The handshake's frames against arbitrary bytes, on both sides: whatever a
// stranger sends, the checks accept only well-formed frames with a rank of
// the job, and a proof that matches only when made with the token.
//
// Input: a 32-byte header and its payload, as read from the wire.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "net/errors.hpp"
#include "net/handshake_messages.hpp"

namespace nd = csp::net::detail;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < csp::net::header::size) return 0;
    csp::net::header h;
    try {
        h = csp::net::header::decode(reinterpret_cast<const std::byte*>(data), 4096);
    } catch (const csp::net::frame_error&) {
        return 0;
    }
    const std::string body(reinterpret_cast<const char*>(data) + csp::net::header::size,
                           size - csp::net::header::size);
    if (body.size() != h.length) return 0;  // the reader reads exactly `length` bytes
    try {
        const auto hello = nd::check_hello(h, body, "fuzz-job", 1, 8);
        if (hello.rank >= 8 || hello.rank == 1) std::abort();  // only peers pass
        if (hello.limits.window == 0) std::abort();            // nor a window nothing fits in
        nd::handshake_context ctx{"fuzz-job", hello.rank, 1, hello.connector_nonce, nd::fresh_nonce()};
        // A proof from the input never matches one made with the token for a
        // fresh nonce (a 2^-256 chance).
        try {
            const auto given = nd::check_proof_frame(h, body, hello.rank);
            if (nd::proofs_match(nd::prove(nd::role::connector, "token", ctx), given)) std::abort();
        } catch (const nd::refusal&) {
        }
    } catch (const nd::refusal&) {
    }
    try {
        const auto c = nd::check_challenge(h, body, 3);
        nd::handshake_context ctx{"fuzz-job", 1, 3, nd::fresh_nonce(), c.acceptor_nonce};
        if (nd::proofs_match(nd::prove(nd::role::acceptor, "token", ctx), c.acceptor_proof)) std::abort();
    } catch (const nd::refusal&) {
    }
    return 0;
}
