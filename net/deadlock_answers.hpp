#pragma once
// A node's side of the job-wide deadlock detector (deadlock_waves.hpp): it
// answers the nameserver's waves on its registration connection with
// samples of its runtime (csp/quiescence.hpp) and its traffic counters, and
// when the job is found deadlocked, hands the job's report to the switch,
// which fails the node's blocked processes with it in order with the
// departures it hands on (a peer that left because of the report may have
// sent it in its goodbye first, frame.hpp). Runs in the process that reads
// the registration connection.
#include <cstdint>
#include <string>
#include <vector>

#include "net/detail/node_core.hpp"

namespace csp::net::detail {

// The job's deadlock report (a head line, then "node <r>: ..." lines, each
// after "\n  ") as node `rank`'s blocked processes fail with it: whole
// while it has at most `others_kept` lines about other nodes; past that,
// the head, this node's own lines and one line counting the others. The
// whole report is printed once, by csp-launch or the job's csp-nameserver,
// and a program that prints its error at every node then prints each
// node's part once, not a 64-line report 64 times.
std::string report_for_node(const std::string& report, int rank, std::size_t others_kept = 12);

class deadlock_answers {
public:
    deadlock_answers(node_core& core, int fd) : core_(core), fd_(fd) {}

    // A line from the nameserver (split into `w`); false if it is not the
    // detector's. May wait (a sample waits for the runtime to idle).
    bool handle(const std::vector<std::string>& w, const std::string& line);

private:
    void send_line(std::string line);

    node_core& core_;
    int fd_;
    // A DEADLOCK report being read: its lines still to come.
    std::size_t report_left_ = 0;
    std::vector<std::string> report_;
};

}  // namespace csp::net::detail
