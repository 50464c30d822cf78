#include "net/transport.hpp"

#include "net/tcp_transport.hpp"

namespace csp::net::detail {

std::unique_ptr<transport> make_transport(const node_core&, int, unique_fd connection) {
    return std::make_unique<tcp_transport>(std::move(connection));
}

}  // namespace csp::net::detail
