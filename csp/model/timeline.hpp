#pragma once
// A timeline of a real run in the Chrome trace-event format (JSON), which
// Perfetto (ui.perfetto.dev) and chrome://tracing open.
//
//   csp::model::timeline t;          // installs itself as the observer
//   csp::run(root);
//   t.write(file);                   // and uninstalls
//
// It chains like the recorder (chained_observer.hpp).
// One track per process (a complete event from its start, or its first
// event when it began before the timeline, to its end); each completed
// channel operation is an instant on its process's track, and the k-th
// write and the k-th read of a channel are joined by a flow arrow
// (channels are FIFO, so they carried the same value).
//
// The program's processes and the library's own (daemons: the IO
// scheduler, a node's switch and links) are two separate groups of tracks.
// A channel a daemon used is the library's: its operations appear on the
// daemons' tracks only, so a port receive shows on the receiving process's
// track as the message it took, not as the mailbox read behind it.
//
// Messages between nodes (event::kind::message_sent / message_received)
// are instants too, each with one end of a flow arrow keyed by
// (from, to, port, tag, k): merge_timelines (timeline_merge.hpp) joins the
// ends found in the nodes' files into one job timeline. A timeline made
// with a node's rank says so in the file, with the wall-clock time it
// started, which the merge aligns the nodes by.
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "csp/model/chained_observer.hpp"

namespace csp::model {

class timeline final : public chained_observer {
public:
    timeline();
    // The timeline of node `rank` of a job (a rank of -1: not a node's).
    explicit timeline(int rank);
    ~timeline() override;

    void on_event(const csp::event& e) override;

    // Stops recording (if still on) and writes the JSON.
    void write(std::ostream& os);

    // Communications recorded so far: channel writes and reads, and
    // messages sent to and taken from other nodes.
    std::size_t writes() const;
    std::size_t reads() const;
    std::size_t messages_sent() const;
    std::size_t messages_received() const;

private:
    struct entry {
        char phase;  // 'X' complete, 'i' instant, 's'/'f' flow ends
        double us;
        double duration = 0;
        std::size_t track = 0;
        std::string name = {};
        std::uint64_t flow = 0;
        std::uint64_t channel = 0;  // a channel event's channel, else 0
        std::string message = {};   // a message flow's key, else empty
    };
    struct track {
        std::string name = {};
        bool library;  // a daemon's
    };
    using message_key = std::tuple<int, int, std::uint32_t, std::uint64_t>;  // from, to, port, tag

    void stop();
    double now() const;
    // The track of the event's process; made at `t` when the process
    // begins, or at its first event if it began before the timeline.
    std::size_t track_of(const csp::event& e, double t);
    void add_message(const csp::event& e, std::size_t track, double t);
    void write_entry(std::ostream& os, const entry& e) const;

    const int rank_;
    mutable std::mutex lock_;
    bool stopped_ = false;
    double stopped_at_ = 0;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
    std::int64_t epoch_us_;  // wall-clock microseconds at start_
    std::vector<entry> entries_;
    std::vector<track> tracks_;
    std::map<const void*, std::pair<std::size_t, double>> live_;  // process -> (track, start)
    std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> counts_;  // channel -> (writes, reads)
    std::set<std::uint64_t> library_channels_;                                  // channels a daemon used
    std::map<message_key, std::pair<std::uint64_t, std::uint64_t>> message_counts_;  // (sent, received)
    // The same for messages with a sequence, keyed by (from, to, sequence).
    std::map<std::tuple<int, int, std::uint16_t>, std::pair<std::uint64_t, std::uint64_t>> sequence_counts_;
    std::size_t writes_ = 0, reads_ = 0, sent_ = 0, received_ = 0;
};

}  // namespace csp::model
