#pragma once
// The wire format: every frame is a 32-byte header and `length` payload bytes.
//
//   offset size field     value
//   ------ ---- --------- ------------------------------------------------------
//     0     4   magic     0x4E505343, the bytes "CSPN"
//     4     1   version   1; any other value closes the connection
//     5     1   opcode    1 data, 2 hello, 3 welcome, 4 refuse, 5 goodbye
//     6     2   flags     0 (reserved)
//     8     4   length    payload bytes; checked against the receiver's maximum
//                         before anything is allocated
//    12     4   source    rank of the sending node
//    16     4   port      destination port (data frames)
//    20     4   reserved  0
//    24     8   tag       free for the application; collectives number their
//                         invocations with it
//
// All fields little-endian. A connection starts with one hello from the side
// that connected (payload "job\ntoken"), answered by a welcome (payload: the
// token) or a refuse (payload: the reason, then the connection is closed).
// Data frames follow in both directions. A node that closes sends goodbye as
// its last frame and then shuts down its sending side.
#include <cstddef>
#include <cstdint>
#include <string>

namespace csp::net {

enum class opcode : std::uint8_t { data = 1, hello = 2, welcome = 3, refuse = 4, goodbye = 5 };

struct header {
    static constexpr std::uint32_t magic = 0x4E505343;
    static constexpr std::uint8_t current_version = 1;
    static constexpr std::size_t size = 32;

    opcode op = opcode::data;
    std::uint32_t length = 0;
    std::uint32_t source = 0;
    std::uint32_t port = 0;
    std::uint64_t tag = 0;

    // The frames there are, by name: every frame is built through these.
    static header data(std::uint32_t source, std::uint32_t port, std::uint64_t tag, std::uint32_t length) noexcept;
    static header hello(std::uint32_t source, std::uint32_t length) noexcept;
    static header welcome(std::uint32_t source, std::uint32_t length) noexcept;
    static header refuse(std::uint32_t source, std::uint32_t length) noexcept;
    static header goodbye(std::uint32_t source) noexcept;

    void encode(std::byte* out) const noexcept;

    // Parses and validates 32 bytes. Throws frame_error naming what is wrong
    // (bad magic, version, opcode, or a length over max_length).
    static header decode(const std::byte* in, std::size_t max_length);
};

const char* describe(opcode op) noexcept;

}  // namespace csp::net
