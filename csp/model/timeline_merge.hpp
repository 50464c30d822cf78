#pragma once
// One timeline for a whole job, from the files its nodes wrote
// (timeline.hpp, made with each node's rank; csp-launch --trace does it).
//
// Node r's tracks become two processes of the merged trace: "node r" (the
// program's processes) and "node r: library" (its daemons). Each node's
// times move by the difference between its wall-clock start and the
// earliest node's, so nodes on one host line up to the clock's resolution
// (across hosts, as well as their clocks agree). A channel's arrows stay
// within their node; a message's send and receive, written in two files,
// become one arrow between nodes.
#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace csp::model {

struct merged_timeline {
    std::size_t nodes = 0;
    std::size_t messages = 0;     // sends joined to their receive
    std::size_t unmatched = 0;    // a send or a receive without the other end (a node's file missing, a
                                  // message never taken, a node that ended before it wrote its file)
};

// Throws std::runtime_error naming the file that cannot be read, is not
// JSON, is not a timeline, or repeats another file's node.
merged_timeline merge_timelines(const std::vector<std::string>& files, std::ostream& out);

}  // namespace csp::model
