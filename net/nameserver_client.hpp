#pragma once
// A node's side of the nameserver protocol (nameserver_protocol.hpp).
#include <string>
#include <vector>

#include "csp/waiter.hpp"
#include "net/socket.hpp"

namespace csp::net {

// A node's entry in a nameserver, held for as long as the connection lives.
struct registration {
    int rank = -1;
    int size = 0;
    unique_fd connection;  // closing it removes the entry
    std::string unread;    // what the nameserver sent after its answer (GONE lines, nameserver.hpp)
};

// Registers `at` as rank `rank` (-1: any free one) of `job`; throws
// nameserver_error with the server's reason when it refuses.
registration register_node(const endpoint& nameserver, const std::string& job, int rank, int size,
                           const endpoint& at, clock::time_point deadline);

// Where rank `rank` of `job` listens, waiting until `deadline` for it to
// register (or until `stop` is poisoned: gave_up); rank_ended_error at once
// if its registration ended already.
endpoint lookup(const endpoint& nameserver, const std::string& job, int rank, clock::time_point deadline,
                give_up stop = nullptr);

// The ranks of `job` registered now, as rank -> address, and its size.
struct job_listing {
    int size = 0;
    std::vector<std::pair<int, endpoint>> nodes;
};
job_listing list_job(const endpoint& nameserver, const std::string& job, clock::time_point deadline);

}  // namespace csp::net
