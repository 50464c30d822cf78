#include "collectives/net_communicator.hpp"

#include <cstdint>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "net/errors.hpp"
#include "net/log.hpp"

namespace csp::collectives {

template class mailbox<net::message>;

namespace {
net::node& with_a_size(net::node& n) {
    if (n.size() < 1) throw usage_error("net_communicator: the node's job size is unknown");
    return n;
}
}  // namespace

net_communicator::net_communicator(net::node& n, net::port_id port)
    : node_(&with_a_size(n)), port_id_(port), claim_(n.claim(port, "net_communicator", net::departures::each, inbox_)) {}

net_communicator::~net_communicator() {
    // A message no call took came for a call this rank did not make, or one
    // whose ranks disagreed on its root (each group of agreeing ranks
    // completes alone): the answer some rank returned may be wrong.
    try {
        const std::size_t n = box_.unclaimed();
        if (n == 0) return;
        std::string line = "closing with " + std::to_string(n) + (n == 1 ? " message" : " messages") +
                           " no collective call took: ";
        const auto listed = box_.describe_unclaimed(4);
        for (std::size_t i = 0; i < listed.size(); ++i) line.append(i == 0 ? "" : ", ").append(listed[i]);
        if (listed.size() < n) line.append(", ...");
        log_line(line + " (a peer made a call this rank did not make, or the ranks named different roots for one call)");
    } catch (const std::exception&) {
        // Out of memory while closing: nothing more to say.
    }
}

mailbox<net::message>::envelope net_communicator::take(int from, std::uint64_t bits, std::span<const int> among) {
    auto e = box_.take(from, bits, among);
    net::report_taken(e.body, rank());
    return e;
}

void net_communicator::inbox::deliver(net::message m) noexcept {
    if (m.failure) {
        box_.fail(m.failure->peer(), std::make_exception_ptr(*m.failure));
        return;
    }
    const int source = m.source;
    const std::uint64_t tag = m.tag;
    box_.deliver(source, tag, std::move(m));
}

void net_communicator::log_line(const std::string& line) const {
    net::log_line("csp.net " + node_->job() + "/" + std::to_string(rank()) + ": " + line);
}

host_board* net_communicator::board_on_host(stream s, tag t) { return boards_.small(*this, s, t); }

host_board* net_communicator::large_board_on_host(stream s, tag t) { return boards_.large(*this, s, t); }

}  // namespace csp::collectives
