#pragma once
// Where a node or nameserver listens: a host (name or address) and a port.
#include <cstdint>
#include <string>

namespace csp::net {

struct endpoint {
    std::string host;
    std::uint16_t port = 0;

    // "host:port" (or "[v6]:port"); throws usage_error naming the text if it is not one.
    static endpoint parse(const std::string& text);
    std::string str() const { return host + ":" + std::to_string(port); }
};

}  // namespace csp::net
