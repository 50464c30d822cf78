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

mailbox<net::message>::envelope net_communicator::take(int from, std::uint64_t bits) {
    auto e = box_.take(from, bits);
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

host_board* net_communicator::board_on_host(stream s, tag t) {
    // Every plain allreduce and barrier at the host level asks for the
    // default stream's board: once known, without the lock or the map.
    if (s.id == 0 && default_board_known_.load(std::memory_order_acquire)) return default_board_;
    host_board* b = nullptr;
    if (node_->shares_host_memory()) {
        {
            std::lock_guard lk(boards_lock_);
            if (auto it = host_boards_.find(s.id); it != host_boards_.end()) return it->second.get();
        }
        auto made = set_up_host_board(t, {});
        std::lock_guard lk(boards_lock_);
        b = host_boards_.emplace(s.id, std::move(made)).first->second.get();
    }
    if (s.id == 0) {
        default_board_ = b;
        default_board_known_.store(true, std::memory_order_release);
    }
    return b;
}

host_board* net_communicator::large_board_on_host(stream s, tag t) {
    {
        std::lock_guard lk(boards_lock_);
        if (auto it = large_boards_.find(s.id); it != large_boards_.end()) return it->second.get();
    }
    auto made = set_up_host_board(t, host_board::large_shape(size()));
    std::lock_guard lk(boards_lock_);
    return large_boards_.emplace(s.id, std::move(made)).first->second.get();
}

// Rank 0 makes the segment and sends its name (step 1; empty: none); each
// other rank maps it and answers whether it could (step 2); rank 0 sends
// whether all could (step 3), then removes the name: every rank that will
// ever map it has. Then every rank greets every other (step 4): any rank
// may have to wake any other, and a wake should not wait for a link to be
// set up (a connection and a handshake: milliseconds). A large board skips
// step 4: it is asked for only after a meeting on the stream's small board,
// whose set-up greeted every pair already. A lost peer fails the step's
// receive, as in any collective; the board's destructor then removes the
// name.
std::unique_ptr<host_board> net_communicator::set_up_host_board(tag t, host_board::shape sh) {
    auto b = make_host_board(t, sh);
    if (b && sh == host_board::shape{}) {
        std::vector<int> everyone_else;
        for (int q = 0; q < size(); ++q)
            if (q != rank()) everyone_else.push_back(q);
        send_each(everyone_else, t.step(4), true);
        for (int q : everyone_else) (void)receive<bool>(q, t.step(4));
    }
    return b;
}

std::unique_ptr<host_board> net_communicator::make_host_board(tag t, host_board::shape sh) {
    const int n = size(), me = rank();
    const bool oversubscribed = node_->host_oversubscribed();
    std::vector<int> others;
    for (int q = 1; q < n; ++q) others.push_back(q);
    auto unusable = [&](const std::string& why) {
        net::log_line("csp.net " + node_->job() + "/" + std::to_string(me) +
                      ": collectives pass messages instead of meeting in shared memory: " + why);
        return nullptr;
    };
    std::unique_ptr<host_board> b;
    if (me == 0) {
        std::string name, why;
        try {
            b = std::make_unique<host_board>(host_board::create(n, me, oversubscribed, sh));
            name = b->name();
        } catch (const net::net_error& e) {
            why = e.what();
        }
        send_each(others, t.step(1), name);
        if (!b) return unusable(why);
        bool all = true;
        for (int q : others) all = receive<bool>(q, t.step(2)) && all;
        send_each(others, t.step(3), all);
        b->unlink_name();
        if (!all) return unusable("a rank could not map the segment");
        return b;
    }
    const auto name = receive<std::string>(0, t.step(1));
    if (name.empty()) return nullptr;  // rank 0 logged why
    std::string why;
    try {
        b = std::make_unique<host_board>(host_board::open(name, n, me, oversubscribed, sh));
    } catch (const net::net_error& e) {
        why = e.what();
    }
    send(0, t.step(2), b != nullptr);
    if (!b) return unusable(why);
    if (!receive<bool>(0, t.step(3))) return nullptr;
    return b;
}

}  // namespace csp::collectives
