#include "net/frame.hpp"

#include <cstdio>
#include <cstring>

#include "net/errors.hpp"
#include "net/little_endian.hpp"

namespace csp::net {
namespace {

using detail::get;
using detail::put;

std::string hex(std::uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08X", v);
    return buf;
}

}  // namespace

header header::data(std::uint32_t source, std::uint32_t port, std::uint64_t tag, std::uint32_t length,
                    std::uint32_t type, std::uint16_t sequence) noexcept {
    header h;
    h.op = opcode::data;
    h.sequence = sequence;
    h.source = source;
    h.port = port;
    h.type = type;
    h.tag = tag;
    h.length = length;
    return h;
}

namespace {
header control(opcode op, std::uint32_t source, std::uint32_t length) noexcept {
    header h;
    h.op = op;
    h.source = source;
    h.length = length;
    return h;
}
}  // namespace

header header::hello(std::uint32_t source, std::uint32_t length) noexcept {
    return control(opcode::hello, source, length);
}
header header::welcome(std::uint32_t source, std::uint32_t length) noexcept {
    return control(opcode::welcome, source, length);
}
header header::refuse(std::uint32_t source, std::uint32_t length) noexcept {
    return control(opcode::refuse, source, length);
}
header header::goodbye(std::uint32_t source, std::uint32_t length) noexcept {
    return control(opcode::goodbye, source, length);
}
header header::challenge(std::uint32_t source, std::uint32_t length) noexcept {
    return control(opcode::challenge, source, length);
}
header header::proof(std::uint32_t source, std::uint32_t length) noexcept {
    return control(opcode::proof, source, length);
}
header header::credit(std::uint32_t source, std::uint64_t bytes) noexcept {
    header h = control(opcode::credit, source, 0);
    h.tag = bytes;
    return h;
}
header header::ask_credit(std::uint32_t source) noexcept { return control(opcode::ask_credit, source, 0); }
header header::transports(std::uint32_t source, std::uint32_t length) noexcept {
    return control(opcode::transports, source, length);
}

void header::encode(std::byte* out) const noexcept {
    put<std::uint32_t>(out + 0, magic);
    put<std::uint8_t>(out + 4, current_version);
    put<std::uint8_t>(out + 5, static_cast<std::uint8_t>(op));
    put<std::uint16_t>(out + 6, op == opcode::data ? sequence : std::uint16_t{0});
    put<std::uint32_t>(out + 8, length);
    put<std::uint32_t>(out + 12, source);
    put<std::uint32_t>(out + 16, port);
    put<std::uint32_t>(out + 20, type);
    put<std::uint64_t>(out + 24, tag);
}

header header::decode(const std::byte* in, std::size_t max_length) {
    const auto m = get<std::uint32_t>(in);
    if (m != magic) throw frame_error("malformed frame: bad magic " + hex(m) + " (expected " + hex(magic) + ")");
    const auto v = get<std::uint8_t>(in + 4);
    if (v != current_version)
        throw frame_error("unsupported frame version " + std::to_string(v) + " (this node speaks version " +
                          std::to_string(current_version) + ")");
    const auto op = get<std::uint8_t>(in + 5);
    if (op < 1 || op > 10) throw frame_error("malformed frame: unknown opcode " + std::to_string(op));
    header h;
    h.op = static_cast<opcode>(op);
    const auto flags = get<std::uint16_t>(in + 6);
    if (h.op == opcode::data) h.sequence = flags;
    else if (flags != 0)
        throw frame_error("malformed " + std::string(describe(h.op)) + " frame: flags " + hex(flags) +
                          " set (reserved, must be 0)");
    h.length = get<std::uint32_t>(in + 8);
    h.source = get<std::uint32_t>(in + 12);
    h.port = get<std::uint32_t>(in + 16);
    h.type = get<std::uint32_t>(in + 20);
    h.tag = get<std::uint64_t>(in + 24);
    if (h.op != opcode::data && (h.port != 0 || h.type != 0 || (h.tag != 0 && h.op != opcode::credit)))
        throw frame_error("malformed " + std::string(describe(h.op)) +
                          " frame: port, type and tag must be 0 in a control frame");
    if (h.op == opcode::credit && (h.length != 0 || h.tag == 0))
        throw frame_error("malformed credit frame: it must credit at least one byte and carry no payload");
    if (h.op == opcode::ask_credit && h.length != 0)
        throw frame_error("malformed ask_credit frame with a payload of " + std::to_string(h.length) + " bytes");
    if (h.op == opcode::goodbye && h.length > max_farewell)
        throw frame_error("malformed goodbye frame with a payload of " + std::to_string(h.length) +
                          " bytes (at most " + std::to_string(max_farewell) + ")");
    if (h.length > max_length)
        throw frame_error("oversized frame: " + std::string(describe(h.op)) + " frame of " + std::to_string(h.length) +
                          " bytes exceeds the maximum of " + std::to_string(max_length));
    return h;
}

const char* describe(opcode op) noexcept {
    switch (op) {
        case opcode::data: return "data";
        case opcode::hello: return "hello";
        case opcode::welcome: return "welcome";
        case opcode::refuse: return "refuse";
        case opcode::goodbye: return "goodbye";
        case opcode::challenge: return "challenge";
        case opcode::proof: return "proof";
        case opcode::credit: return "credit";
        case opcode::ask_credit: return "ask_credit";
        case opcode::transports: return "transports";
    }
    return "unknown";
}

}  // namespace csp::net
