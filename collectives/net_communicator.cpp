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

net_communicator::net_communicator(net::node& n, net::port_id port) : node_(&n), port_id_(port) {
    if (n.size() < 1) throw usage_error("net_communicator: the node's job size is unknown");
    // A daemon: it waits for the network by design, so it is neither in a
    // deadlock report nor failed by one; the receives it feeds are.
    pump_.spawn(csp::proc("collectives pump",
                          [this, port = n.claim(port, "net_communicator", net::departures::each)] { run_pump(port); }),
                csp::process_kind::daemon);
}

net_communicator::~net_communicator() {
    node_->deliver_here(port_id_, std::uint8_t{0}, stop_tag);
    pump_.wait();
    node_->release(port_id_);
}

mailbox<net::message>::envelope net_communicator::take(int from, std::uint64_t bits, std::span<const int> among) {
    auto e = box_.take(from, bits, among);
    net::report_taken(e.body, rank());
    return e;
}

void net_communicator::run_pump(net::port port) {
    for (;;) {
        try {
            net::message m = port.receive();
            if (m.tag == stop_tag && m.source == rank()) return;
            box_.deliver(m.source, m.tag, std::move(m));
        } catch (const net::peer_error& e) {
            box_.fail(e.peer(), std::current_exception());
        }
    }
}

void net_communicator::log_line(const std::string& line) const {
    net::log_line("csp.net " + node_->job() + "/" + std::to_string(rank()) + ": " + line);
}

host_board* net_communicator::board_on_host(stream s, tag t) { return boards_.small(*this, s, t); }

host_board* net_communicator::large_board_on_host(stream s, tag t) { return boards_.large(*this, s, t); }

}  // namespace csp::collectives
