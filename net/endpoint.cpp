#include "net/endpoint.hpp"

#include <stdexcept>

#include "csp/error.hpp"

namespace csp::net {

endpoint endpoint::parse(const std::string& text) {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
        throw usage_error("'" + text + "' is not an address of the form host:port");
    endpoint e;
    e.host = text.substr(0, colon);
    if (e.host.size() > 2 && e.host.front() == '[' && e.host.back() == ']')
        e.host = e.host.substr(1, e.host.size() - 2);
    try {
        const unsigned long p = std::stoul(text.substr(colon + 1));
        if (p > 65535) throw std::out_of_range("port");
        e.port = static_cast<std::uint16_t>(p);
    } catch (const std::logic_error&) {
        throw usage_error("'" + text + "': the port must be a number from 0 to 65535");
    }
    return e;
}

}  // namespace csp::net
