#pragma once
// The job-wide deadlock detector's bookkeeping, for one job: Mattern's
// four-counter method, in waves the nameserver sends to every node. Pure
// (no IO), so tests and fuzzers can drive it alone.
//
// Each node answers a wave with a sample of itself (csp/quiescence.hpp and
// node_core's traffic counters): quiet (every program process blocked for
// good), what it sent (`out`) and what reached it (`in`), and its activity.
// The job is deadlocked when two consecutive waves over the same nodes
// found every node quiet, with each node's counts and activity unchanged
// between them, and the job's sums of out and in equal:
//
//  - equal sums mean nothing was in flight when the second wave passed (no
//    kind of traffic can be received before it was sent, so no surplus of
//    one kind can hide a deficit of another);
//  - unchanged counts and activity mean no node received anything or ran
//    any program process between the waves, so the samples, though taken at
//    different moments, describe one state of the whole job in which every
//    process waits and no message can come.
//
// Then every node is asked to describe its blocked processes (and must
// still be quiet with the same activity), and the report goes to every node
// and to whoever watches the nameserver (csp-launch prints it).
//
// Nodes that finished: a node that leaves cleanly sends its final counts
// (FINAL, taken once its links closed, so it sends nothing after them); a
// wave over the nodes left adds them to the sums (settled_traffic). A message a
// finished node sent that is still on its way keeps out above in; one sent
// to it after it closed is never counted in, and the job is then never
// found deadlocked (a report missed, never a false one). A node that died
// sends no FINAL, and its job is not probed: its peers' receives fail with
// its departure instead.
//
// Protocol steps (lines on the registration connection, nameserver_protocol.hpp):
//   -> PROBE <wave>                     <- QUIET <wave> <0|1> <out> <in> <activity>
//   -> DESCRIBE <wave>                  <- BLOCKED <wave> <text>  (one per process)
//                                       <- DESCRIBED <wave> <0|1> <activity>
//   -> DEADLOCK <wave> <lines>, then <lines> lines "| <text>"
//                                       <- FINAL <out> <in>  (leaving, unasked)
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace csp::net::detail {

// What nodes that finished sent and received, summed from their FINAL lines.
struct settled_traffic {
    std::uint64_t out = 0, in = 0;
};

class deadlock_waves {
public:
    struct sample {
        bool quiet = false;
        std::uint64_t out = 0, in = 0, activity = 0;
        bool operator==(const sample&) const = default;
    };
    enum class verdict { pending, busy, describe };

    // The wave to probe `ranks` with now, or 0 while one is still out (for
    // fewer than `patience` calls) or after a deadlock was reported. The
    // finished nodes' counts `done` change only with the set of ranks.
    std::uint64_t start(const std::vector<int>& ranks, settled_traffic done = {}, int patience = 8) {
        if (reported_) return 0;
        if (wave_ != 0 && !done_ && ++waited_ < patience) return 0;
        if (wave_ != 0 && !done_) previous_.clear();  // abandoned: the next wave starts a new pair
        ++wave_;
        waited_ = 0;
        done_ = false;
        describing_ = false;
        current_.clear();
        for (int r : ranks) current_[r] = std::nullopt;
        settled_ = done;
        return wave_;
    }

    verdict answer(std::uint64_t wave, int rank, const sample& s) {
        if (wave != wave_ || done_ || describing_) return verdict::pending;
        auto it = current_.find(rank);
        if (it == current_.end() || it->second) return verdict::pending;
        it->second = s;
        for (const auto& [r, a] : current_)
            if (!a) return verdict::pending;
        // Complete.
        std::map<int, sample> now;
        std::uint64_t out = settled_.out, in = settled_.in;
        bool quiet = true;
        for (const auto& [r, a] : current_) {
            now[r] = *a;
            out += a->out;
            in += a->in;
            quiet = quiet && a->quiet;
        }
        const bool deadlocked = quiet && out == in && now == previous_;
        previous_ = quiet ? std::move(now) : std::map<int, sample>{};
        if (!deadlocked) {
            done_ = true;
            return verdict::busy;
        }
        describing_ = true;
        described_.clear();
        lines_.clear();
        return verdict::describe;
    }

    void blocked(std::uint64_t wave, int rank, std::string text) {
        if (wave == wave_ && describing_ && !described_.count(rank) && current_.count(rank))
            lines_[rank].push_back(std::move(text));
    }

    // The report, once every node described itself still as it was.
    std::optional<std::vector<std::string>> described(std::uint64_t wave, int rank, bool quiet,
                                                      std::uint64_t activity) {
        if (wave != wave_ || !describing_ || !current_.count(rank) || described_.count(rank)) return std::nullopt;
        if (!quiet || activity != previous_[rank].activity) {  // it moved: no deadlock after all
            describing_ = false;
            done_ = true;
            previous_.clear();
            return std::nullopt;
        }
        described_.insert(rank);
        if (described_.size() != current_.size()) return std::nullopt;
        reported_ = true;
        done_ = true;
        std::vector<std::string> report;
        for (const auto& [r, ls] : lines_)
            for (const auto& l : ls) report.push_back("node " + std::to_string(r) + ": " + l);
        return report;
    }

    bool reported() const noexcept { return reported_; }

private:
    std::uint64_t wave_ = 0;
    int waited_ = 0;
    bool done_ = false, describing_ = false, reported_ = false;
    std::map<int, std::optional<sample>> current_;
    settled_traffic settled_;
    std::map<int, sample> previous_;  // the last complete wave, if every node was quiet in it
    std::set<int> described_;
    std::map<int, std::vector<std::string>> lines_;
};

}  // namespace csp::net::detail
