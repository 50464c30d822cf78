#pragma once
// The host boards of one communicator (host_board.hpp): per stream, a small
// board and, for values too large for it, a large one; each made by the
// first collective call on its stream that asks for it, as a collective
// step of every rank with that call's tag. net_communicator keeps one store
// for its whole job, and a group (group.hpp) whose members share a host one
// for the group: a host's ranks then meet in shared memory inside a
// hierarchy (hierarchy.hpp) as they do in a job that fits on one host.
//
// Set-up (set_up_host_board): rank 0 makes the segment and sends its name
// (step 1; empty: none); each other rank maps it and answers whether it
// could (step 2); rank 0 sends whether all could (step 3), then removes the
// name: every rank that will ever map it has. Then every rank greets every
// other (step 4): any rank may have to wake any other, and a wake should
// not wait for a link to be set up (a connection and a handshake:
// milliseconds). A large board skips step 4: it is asked for only after a
// meeting on the stream's small board, whose set-up greeted every pair
// already. A lost peer fails the step's receive, as in any collective; the
// board's destructor then removes the name. A board that cannot be made or
// mapped at some rank is none at every rank (they all pass messages), and
// the reason goes to the communicator's log_line.
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "collectives/host_board.hpp"
#include "collectives/selection.hpp"
#include "collectives/tag.hpp"

namespace csp::collectives {

namespace detail {

template <class C>
std::unique_ptr<host_board> make_host_board(C& comm, tag t, host_board::shape sh) {
    const int n = comm.size(), me = comm.rank();
    const bool oversubscribed = comm.host_oversubscribed();
    auto unusable = [&](const std::string& why) -> std::unique_ptr<host_board> {
        comm.log_line("collectives pass messages instead of meeting in shared memory: " + why);
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
        for (int q = 1; q < n; ++q) comm.send(q, t.step(1), name);
        if (!b) return unusable(why);
        bool all = true;
        for (int q = 1; q < n; ++q) all = comm.template receive<bool>(q, t.step(2)) && all;
        for (int q = 1; q < n; ++q) comm.send(q, t.step(3), all);
        b->unlink_name();
        if (!all) return unusable("a rank could not map the segment");
        return b;
    }
    const auto name = comm.template receive<std::string>(0, t.step(1));
    if (name.empty()) return nullptr;  // rank 0 logged why
    std::string why;
    try {
        b = std::make_unique<host_board>(host_board::open(name, n, me, oversubscribed, sh));
    } catch (const net::net_error& e) {
        why = e.what();
    }
    comm.send(0, t.step(2), b != nullptr);
    if (!b) return unusable(why);
    if (!comm.template receive<bool>(0, t.step(3))) return nullptr;
    return b;
}

template <class C>
std::unique_ptr<host_board> set_up_host_board(C& comm, tag t, host_board::shape sh) {
    auto b = make_host_board(comm, t, sh);
    if (b && sh == host_board::shape{}) {
        for (int q = 0; q < comm.size(); ++q)
            if (q != comm.rank()) comm.send(q, t.step(4), true);
        for (int q = 0; q < comm.size(); ++q)
            if (q != comm.rank()) (void)comm.template receive<bool>(q, t.step(4));
    }
    return b;
}

}  // namespace detail

class host_boards {
public:
    // The small board of stream s of `comm`, or null (see above): none
    // without a step where its ranks do not share the host's memory (its
    // link_level() is not host, the same at every rank). `comm` also answers
    // host_oversubscribed() and takes log_line(); both are asked only while
    // a board is made.
    template <class C>
    host_board* small(C& comm, stream s, tag t) {
        // Every plain allreduce and barrier at the host level asks for the
        // default stream's board: once known, without the lock or the map.
        if (s.id == 0 && default_known_.load(std::memory_order_acquire)) return default_;
        host_board* b = nullptr;
        if (comm.link_level() == link_level::host) {
            {
                std::lock_guard lk(lock_);
                if (auto it = small_.find(s.id); it != small_.end()) return it->second.get();
            }
            auto made = detail::set_up_host_board(comm, t, {});
            std::lock_guard lk(lock_);
            b = small_.emplace(s.id, std::move(made)).first->second.get();
        }
        if (s.id == 0) {
            default_ = b;
            default_known_.store(true, std::memory_order_release);
        }
        return b;
    }
    // The large board of stream s (host_board::large_shape), asked for only
    // by ranks that have met on the stream's small board.
    template <class C>
    host_board* large(C& comm, stream s, tag t) {
        {
            std::lock_guard lk(lock_);
            if (auto it = large_.find(s.id); it != large_.end()) return it->second.get();
        }
        auto made = detail::set_up_host_board(comm, t, host_board::large_shape(comm.size()));
        std::lock_guard lk(lock_);
        return large_.emplace(s.id, std::move(made)).first->second.get();
    }

private:
    std::mutex lock_;
    std::map<std::uint32_t, std::unique_ptr<host_board>> small_;  // by stream id; null: none possible
    std::map<std::uint32_t, std::unique_ptr<host_board>> large_;  // the same, large ones
    host_board* default_ = nullptr;           // stream 0's, once
    std::atomic<bool> default_known_{false};  // default_ is set
};

}  // namespace csp::collectives
