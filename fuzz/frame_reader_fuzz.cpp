// The frame reader against arbitrary bytes from a peer that passed the
// handshake: it must cut valid frames into messages, refuse anything else
// with frame_error, and never read or allocate past what the header allows.
//
// Input: the first byte picks how the stream is split into reads (1 to 256
// bytes each), the rest is the stream.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "net/frame_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::size_t chunk = data[0] + 1u;
    const std::uint32_t max_frame = 1 << 16;
    csp::net::frame_reader reader(max_frame, 2);
    std::vector<csp::net::message> out;
    std::size_t at = 1;
    try {
        while (at < size) {
            std::size_t room;
            std::byte* dst = reader.space(room);
            if (room == 0) std::abort();  // the reader always wants bytes
            const std::size_t n = std::min({room, chunk, size - at});
            std::memcpy(dst, data + at, n);
            at += n;
            reader.arrived(n, out);
        }
        (void)reader.unfinished();
    } catch (const csp::net::frame_error&) {
        // refused: the connection would close
    }
    for (const auto& m : out) {
        if (m.source != 2) std::abort();           // only the linked peer's frames pass
        if (m.size() > max_frame) std::abort();     // never more than the limit
    }
    // A farewell only with a goodbye, and never over its limit.
    if (!reader.goodbye() && !reader.farewell().empty()) std::abort();
    if (reader.farewell().size() > csp::net::header::max_farewell) std::abort();
    return 0;
}
