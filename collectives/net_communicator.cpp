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
    : node_(&with_a_size(n)),
      port_id_(port),
      claim_(n.claim(port, "net_communicator", net::departures::each, inbox_)) {}

net_communicator::~net_communicator() {
    try {
        if (const auto line = box_.unclaimed_report(); !line.empty()) log_line(line);
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
        comm_.box_.fail(m.failure->peer(), std::make_exception_ptr(*m.failure));
        return;
    }
    const int source = m.source;
    const std::uint64_t tag = m.tag;
    comm_.box_.deliver(source, tag, std::move(m));
}

// The node closed under the communicator: what came from the other ranks
// is still taken, then every receive from them throws instead of waiting
// for what cannot come. (A message to itself does not pass the node.)
void net_communicator::inbox::node_closed(const std::string& node) noexcept {
    try {
        const auto error = std::make_exception_ptr(
            csp::retired_error("net_communicator: its node (" + node + ") is closed, and no message can come"));
        for (int r = 0; r < comm_.size(); ++r)
            if (r != comm_.rank()) comm_.box_.fail(r, error);
    } catch (...) {
        // Out of memory for the text: the receives wait as before.
    }
}

// A failed call's messages that come after this rank closed the
// communicator are expected: the failure was thrown at every rank.
net::leftover_filter net_communicator::inbox::expected_after_release() const {
    return [expected = comm_.box_.expected_leftovers()](const net::message& m) mutable { return expected(m.tag); };
}

void net_communicator::log_line(const std::string& line) const {
    net::log_line("csp.net " + node_->job() + "/" + std::to_string(rank()) + ": " + line);
}

host_board* net_communicator::board_on_host(stream s, tag t) { return boards_.small(*this, s, t); }

host_board* net_communicator::large_board_on_host(stream s, tag t) { return boards_.large(*this, s, t); }

}  // namespace csp::collectives
