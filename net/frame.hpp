#pragma once
// The wire format: every frame is a 32-byte header and `length` payload bytes.
//
//   offset size field     value
//   ------ ---- --------- ------------------------------------------------------
//     0     4   magic     0x4E505343, the bytes "CSPN"
//     4     1   version   6; any other value closes the connection
//     5     1   opcode    1 data, 2 hello, 3 welcome, 4 refuse, 5 goodbye,
//                         6 challenge, 7 proof, 8 credit, 9 ask_credit,
//                         10 transports
//     6     2   sequence  data frames: the message's number among its sender's
//                         data frames, 1..65535 cyclically, while the sender
//                         is observed (a timeline joins a message's send to
//                         its receive by it, observer.hpp); else 0. Other
//                         frames: 0 (reserved flags; any other value closes
//                         the connection)
//     8     4   length    payload bytes; checked against the receiver's maximum
//                         before anything is allocated
//    12     4   source    rank of the sending node
//    16     4   port      destination port (data frames)
//    20     4   type      data frames: the fingerprint of the sent value's type
//                         (codec.hpp), 0 for untyped bytes; 0 in all others
//    24     8   tag       free for the application; collectives number their
//                         invocations with it; in a credit frame, the bytes
//                         credited (flow_control.hpp)
//
// All fields little-endian; a field that must be 0 and is not closes the
// connection. A connection starts with the handshake (handshake.hpp):
//   connector -> hello      payload: its nonce (32 bytes), its limits (8),
//                           then the job name
//   acceptor  -> challenge  payload: its nonce, its proof (32 bytes each), its
//                           limits (8)
//             or refuse     payload: the reason; then the connection is closed
//   connector -> proof      payload: its proof (32 bytes)
//   acceptor  -> welcome    empty payload, or refuse
// Then each side's first frame is `transports`, whose payload is its UCX
// worker address, or empty if it offers TCP only (ucx_transport.hpp): the
// link moves its frames over UCX if both offered it, else over TCP.
// Limits are two little-endian u32: the largest payload the node accepts
// (max_frame) and the bytes it keeps in flight to a peer (its window).
// Data and credit frames follow in both directions. A node that closes
// sends goodbye as its last frame and then shuts down its sending side.
// Goodbye's payload is empty, or the job-wide deadlock report the leaving
// node was given (text, at most max_farewell bytes, cut to fit the peer's
// max_frame): the report may be why it left, and a peer that hears the
// goodbye before the nameserver's copy of the report must still fail its
// blocked processes with the report, not with the departure
// (deadlock_answers.hpp).
#include <cstddef>
#include <cstdint>
#include <string>

namespace csp::net {

enum class opcode : std::uint8_t {
    data = 1, hello = 2, welcome = 3, refuse = 4, goodbye = 5, challenge = 6, proof = 7, credit = 8,
    ask_credit = 9, transports = 10
};

struct header {
    static constexpr std::uint32_t magic = 0x4E505343;
    static constexpr std::uint8_t current_version = 6;
    static constexpr std::size_t size = 32;
    // The largest payload of a goodbye.
    static constexpr std::uint32_t max_farewell = 64 * 1024;

    opcode op = opcode::data;
    std::uint32_t length = 0;
    std::uint32_t source = 0;
    std::uint32_t port = 0;
    std::uint32_t type = 0;
    std::uint64_t tag = 0;
    std::uint16_t sequence = 0;  // data frames only

    // The frames there are, by name: every frame is built through these.
    static header data(std::uint32_t source, std::uint32_t port, std::uint64_t tag, std::uint32_t length,
                       std::uint32_t type = 0, std::uint16_t sequence = 0) noexcept;
    static header hello(std::uint32_t source, std::uint32_t length) noexcept;
    static header welcome(std::uint32_t source, std::uint32_t length) noexcept;
    static header refuse(std::uint32_t source, std::uint32_t length) noexcept;
    static header goodbye(std::uint32_t source, std::uint32_t length = 0) noexcept;
    static header challenge(std::uint32_t source, std::uint32_t length) noexcept;
    static header proof(std::uint32_t source, std::uint32_t length) noexcept;
    static header credit(std::uint32_t source, std::uint64_t bytes) noexcept;
    static header ask_credit(std::uint32_t source) noexcept;
    static header transports(std::uint32_t source, std::uint32_t length) noexcept;

    void encode(std::byte* out) const noexcept;

    // Parses and validates 32 bytes. Throws frame_error naming what is wrong
    // (bad magic, version, opcode, a reserved field that is not 0, a length
    // over max_length, a goodbye over max_farewell).
    static header decode(const std::byte* in, std::size_t max_length);
};

const char* describe(opcode op) noexcept;

}  // namespace csp::net
