#pragma once
// The id of a port, and how every message of the library names one.
#include <cstdint>
#include <cstdio>
#include <string>

namespace csp::net {

using port_id = std::uint32_t;

// "port 7" for the small ids programs choose; the library's own ports are
// four-letter tags ("COLL"), which read better as hex and their letters
// than as a ten-digit decimal: "port 0x434f4c4c ("COLL")".
inline std::string port_text(port_id id) {
    if (id < 0x10000) return "port " + std::to_string(id);
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x", static_cast<unsigned>(id));
    std::string out = std::string("port ") + hex;
    std::string letters;
    for (int shift = 24; shift >= 0; shift -= 8) {
        const auto c = static_cast<char>((id >> shift) & 0xff);
        if (c < 0x20 || c > 0x7e) return out;
        letters += c;
    }
    return out + " (\"" + letters + "\")";
}

}  // namespace csp::net
