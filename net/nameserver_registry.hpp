#pragma once
// The nameserver's table: jobs, their ranks and addresses, and who holds
// each registration. Pure bookkeeping (no IO), so a fuzzer can drive it
// alone. Each request costs O(log n) in the job's size; the table is
// bounded by max_job_size ranks per job.
#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "net/deadlock_waves.hpp"
#include "net/nameserver_words.hpp"
#include "net/endpoint.hpp"

namespace csp::net::detail {

inline constexpr int max_job_size = 1 << 20;

// How the table tells a registered node something (a GONE line); must not
// block. Called outside the table's lock.
using note_sink = std::function<void(const std::string&)>;
// Lines to send, each to its node, in order.
using tell_list = std::vector<std::pair<note_sink, std::string>>;

class registry {
public:
    // The answer line to a REGISTER; records the entry under `owner`. A
    // node joining late must hear of the ranks that ended before it came,
    // as the others did: their GONE lines land in `earlier`.
    std::string add(const std::vector<std::string>& w, const void* owner, note_sink notes,
                    std::vector<std::pair<std::string, int>>& mine, std::vector<std::string>* earlier = nullptr) {
        if (w.size() != 6) return "ERR usage: REGISTER <job> <rank> <size> <host> <port>";
        const std::string& job = w[1];
        if (!valid_job_name(job)) return "ERR invalid job name '" + job + "'";
        int rank, size;
        endpoint at;
        try {
            rank = std::stoi(w[2]);
            size = std::stoi(w[3]);
            at = endpoint::parse(w[4] + ":" + w[5]);
        } catch (const std::exception&) {
            return "ERR malformed REGISTER: rank, size and port must be numbers";
        }
        if (rank < -1 || size < 0 || size > max_job_size || rank >= max_job_size)
            return "ERR rank must be -1 to " + std::to_string(max_job_size - 1) + " and size 0 to " +
                   std::to_string(max_job_size);
        std::lock_guard lk(lock_);
        forget_stale_jobs_locked();
        auto& j = jobs_[job];
        // A job none of whose nodes is registered is remembered for the
        // ranks that have not come yet (remove). A registration that cannot
        // be such a rank starts the job over: another size, a rank that
        // ended, or an automatic rank.
        if (j.nodes.empty() && !j.gone.empty() && ((size != 0 && size != j.size) || rank == -1 || j.gone.count(rank)))
            j = job_entry{};
        if (j.size == 0) j.size = size;
        auto fail = [&](std::string why) {
            if (j.nodes.empty() && j.gone.empty()) jobs_.erase(job);
            return "ERR " + why;
        };
        if (size != 0 && size != j.size)
            return fail("job '" + job + "' has " + std::to_string(j.size) + " nodes, not " + std::to_string(size));
        const bool automatic = rank == -1;
        if (automatic) {
            // The lowest free rank. No rank below first_free is free, and the
            // scan proves every rank it passes taken, so first_free moves past
            // them: each taken rank is scanned once over the job's life, and a
            // registration costs O(log n) amortised.
            rank = j.first_free;
            for (auto it = j.nodes.lower_bound(rank); it != j.nodes.end() && it->first == rank; ++it) ++rank;
            if (rank >= max_job_size)
                return fail("job '" + job + "' is full (" + std::to_string(max_job_size) + " nodes)");
        }
        if (j.size != 0 && rank >= j.size)
            return fail(j.nodes.size() >= static_cast<std::size_t>(j.size) && w[2] == "-1"
                            ? "job '" + job + "' is full (" + std::to_string(j.size) + " nodes)"
                            : "rank " + std::to_string(rank) + " is out of range for job '" + job + "' of " +
                                  std::to_string(j.size) + " nodes");
        if (auto it = j.nodes.find(rank); it != j.nodes.end())
            return fail("rank " + std::to_string(rank) + " of job '" + job + "' is already registered at " +
                        it->second.at.str());
        j.nodes[rank] = {at, owner, std::move(notes)};
        j.finals.erase(rank);  // it runs again
        if (automatic || rank == j.first_free) j.first_free = rank + 1;
        mine.emplace_back(job, rank);
        if (earlier)
            for (const int g : j.gone)
                if (g != rank) earlier->push_back("GONE " + std::to_string(g));
        return "OK " + std::to_string(rank) + " " + std::to_string(j.size);
    }

    // Ends the registrations of `owner`; the job's other nodes are told
    // "GONE <rank>" (each node's connection process writes it). All of the
    // owner's ranks go first, so ranks leaving together are not told of each
    // other: one connection holding many ranks leaves in O(n log n).
    void remove(const std::vector<std::pair<std::string, int>>& mine, const void* owner) {
        std::vector<std::pair<note_sink, std::string>> tell;
        {
            std::lock_guard lk(lock_);
            std::map<std::string, std::vector<int>> gone;  // per job, the ranks that left
            for (const auto& [job, rank] : mine) {
                auto j = jobs_.find(job);
                if (j == jobs_.end()) continue;
                auto n = j->second.nodes.find(rank);
                if (n != j->second.nodes.end() && n->second.owner == owner) {
                    j->second.nodes.erase(n);
                    j->second.first_free = std::min(j->second.first_free, rank);
                    j->second.gone.insert(rank);
                    gone[job].push_back(rank);
                }
            }
            for (const auto& [job, ranks] : gone) {
                auto j = jobs_.find(job);
                for (const auto& [other, e] : j->second.nodes)
                    for (const int rank : ranks) tell.emplace_back(e.notes, "GONE " + std::to_string(rank));
                // With no node left, the job is forgotten once every rank of
                // it has ended; until then (for keep_emptied_job at most) a
                // rank that registers late hears which ranks ended before it
                // came, instead of waiting for them for ever.
                if (!j->second.nodes.empty()) continue;
                const auto& ended = j->second.gone;
                if (j->second.size > 0 && ended.size() >= static_cast<std::size_t>(j->second.size)) jobs_.erase(j);
                else j->second.emptied = std::chrono::steady_clock::now();
            }
            forget_stale_jobs_locked();
        }
        for (auto& [tell_node, line] : tell) tell_node(line);  // outside the lock
    }

    std::optional<endpoint> find(const std::string& job, int rank) {
        std::lock_guard lk(lock_);
        auto j = jobs_.find(job);
        if (j == jobs_.end()) return std::nullopt;
        auto n = j->second.nodes.find(rank);
        if (n == j->second.nodes.end()) return std::nullopt;
        return n->second.at;
    }

    // The rank's registration ended while the job lasted, and it has not
    // registered again: waiting for it is in vain.
    bool ended(const std::string& job, int rank) {
        std::lock_guard lk(lock_);
        auto j = jobs_.find(job);
        return j != jobs_.end() && j->second.gone.count(rank) && !j->second.nodes.count(rank);
    }

    // --- the job-wide deadlock detector (deadlock_waves.hpp) ---------------
    // A registered rank about to leave cleanly: its final traffic counts.
    void final_counts(const std::string& job, int rank, settled_traffic counts) {
        std::lock_guard lk(lock_);
        auto j = jobs_.find(job);
        if (j != jobs_.end() && j->second.nodes.count(rank)) j->second.finals[rank] = counts;
    }
    // Starts a wave in every job each of whose ranks is registered or left
    // with its final counts. (After a death, a receive waiting for the one
    // gone fails with its departure instead, and one waiting for any rank
    // is not told.)
    void probe(tell_list& tell) {
        std::lock_guard lk(lock_);
        for (auto& [name, j] : jobs_) {
            if (j.size == 0 || j.nodes.empty()) continue;
            const auto ended = finished(j);
            if (static_cast<int>(j.nodes.size() + ended.size()) != j.size) continue;
            std::vector<int> ranks;
            for (const auto& [r, e] : j.nodes) ranks.push_back(r);
            settled_traffic done;
            for (const int r : ended) {
                done.out += j.finals.at(r).out;
                done.in += j.finals.at(r).in;
            }
            if (const auto wave = j.waves.start(ranks, done))
                for (const auto& [r, e] : j.nodes) tell.emplace_back(e.notes, "PROBE " + std::to_string(wave));
        }
    }
    void quiet(const std::string& job, int rank, std::uint64_t wave, const deadlock_waves::sample& s, tell_list& tell) {
        std::lock_guard lk(lock_);
        auto j = jobs_.find(job);
        if (j == jobs_.end()) return;
        if (j->second.waves.answer(wave, rank, s) == deadlock_waves::verdict::describe)
            for (const auto& [r, e] : j->second.nodes) tell.emplace_back(e.notes, "DESCRIBE " + std::to_string(wave));
    }
    void blocked(const std::string& job, int rank, std::uint64_t wave, std::string text) {
        std::lock_guard lk(lock_);
        if (auto j = jobs_.find(job); j != jobs_.end()) j->second.waves.blocked(wave, rank, std::move(text));
    }
    // The job's report, once its last node described itself still blocked;
    // the DEADLOCK lines for every node land in `tell`.
    std::optional<std::string> described(const std::string& job, int rank, std::uint64_t wave, bool still_quiet,
                                         std::uint64_t activity, tell_list& tell) {
        std::lock_guard lk(lock_);
        auto j = jobs_.find(job);
        if (j == jobs_.end()) return std::nullopt;
        auto lines = j->second.waves.described(wave, rank, still_quiet, activity);
        if (!lines) return std::nullopt;
        const auto ended = finished(j->second);
        std::string head = "deadlock in job '" + job + "': every process of its " +
                           std::to_string(j->second.nodes.size()) + (ended.empty() ? "" : " remaining") +
                           " nodes is blocked and no message is in flight";
        if (!ended.empty()) {
            head += ended.size() == 1 ? " (node " : " (nodes ";
            for (std::size_t i = 0; i < ended.size(); ++i)
                head += (i == 0 ? "" : i + 1 == ended.size() ? " and " : ", ") + std::to_string(ended[i]);
            head += ended.size() == 1 ? " has finished)" : " have finished)";
        }
        lines->insert(lines->begin(), head);
        std::string report;
        for (const auto& l : *lines) report.append(report.empty() ? "" : "\n  ").append(l);
        for (const auto& [r, e] : j->second.nodes) {
            tell.emplace_back(e.notes, "DEADLOCK " + std::to_string(wave) + " " + std::to_string(lines->size()));
            for (const auto& l : *lines) tell.emplace_back(e.notes, "| " + l);
        }
        return report;
    }

    // --- what a job's processes are doing (csp-launch --timeout) ----------
    // Asks every node of `job` (STATUS <id>); false if no such job.
    bool ask_status(const std::string& job, tell_list& tell) {
        std::lock_guard lk(lock_);
        auto j = jobs_.find(job);
        if (j == jobs_.end() || j->second.nodes.empty()) return false;
        auto& st = j->second.status;
        st = {st.id + 1, {}, {}};
        for (const auto& [r, e] : j->second.nodes) tell.emplace_back(e.notes, "STATUS " + std::to_string(st.id));
        return true;
    }
    void state(const std::string& job, int rank, std::uint64_t id, std::string text) {
        std::lock_guard lk(lock_);
        auto j = jobs_.find(job);
        if (j == jobs_.end() || j->second.status.id != id || j->second.status.done.count(rank)) return;
        if (j->second.status.lines[rank].size() < max_status_lines)
            j->second.status.lines[rank].push_back(std::move(text));
    }
    void stated(const std::string& job, int rank, std::uint64_t id) {
        std::lock_guard lk(lock_);
        auto j = jobs_.find(job);
        if (j != jobs_.end() && j->second.status.id == id) j->second.status.done.insert(rank);
    }
    // The answers to the last STATUS so far, one line per process, "node r:
    // ..." (a node that has not answered says so); complete: every node answered.
    std::vector<std::string> status(const std::string& job, bool& complete) {
        std::lock_guard lk(lock_);
        complete = false;
        auto j = jobs_.find(job);
        if (j == jobs_.end()) return {"job '" + job + "' has no node registered"};
        const auto& st = j->second.status;
        std::vector<std::string> out;
        complete = true;
        for (const auto& [r, e] : j->second.nodes) {
            const std::string node = "node " + std::to_string(r) + ": ";
            if (!st.done.count(r)) {
                complete = false;
                out.push_back(node + "no answer (no process of it yields to let the node answer)");
                continue;
            }
            const auto it = st.lines.find(r);
            if (it == st.lines.end() || it->second.empty()) out.push_back(node + "no program process left");
            else
                for (const auto& l : it->second) out.push_back(node + l);
        }
        return out;
    }

    std::string list(const std::string& job) {
        std::lock_guard lk(lock_);
        auto j = jobs_.find(job);
        if (j == jobs_.end()) return "JOB 0";
        std::string out = "JOB " + std::to_string(j->second.size);
        for (const auto& [rank, n] : j->second.nodes) out += " " + std::to_string(rank) + "=" + n.at.str();
        return out;
    }

private:
    struct entry {
        endpoint at;
        const void* owner;
        note_sink notes;  // lines for that node's registration connection
    };
    struct job_entry {
        int size = 0;  // 0: not known yet (ranks below max_job_size)
        std::map<int, entry> nodes;
        int first_free = 0;  // no rank below it is free
        std::set<int> gone;  // ranks whose registration ended while the job lasted (at most its size)
        std::map<int, settled_traffic> finals;  // the ranks registered or gone that sent FINAL
        std::chrono::steady_clock::time_point emptied;  // when its last registered node left
        deadlock_waves waves;
        struct {
            std::uint64_t id = 0;
            std::map<int, std::vector<std::string>> lines;
            std::set<int> done;
        } status;  // the last STATUS asked
    };
    static constexpr std::size_t max_status_lines = 1000;  // per node
    // How long a job with no node registered, some of whose ranks never
    // came, is remembered for them.
    static constexpr std::chrono::minutes keep_emptied_job{10};

    // The ranks that left cleanly and have not registered again, in order.
    static std::vector<int> finished(const job_entry& j) {
        std::vector<int> out;
        for (const auto& [r, counts] : j.finals)
            if (!j.nodes.count(r)) out.push_back(r);
        return out;
    }

    void forget_stale_jobs_locked() {
        const auto now = std::chrono::steady_clock::now();
        std::erase_if(jobs_, [&](const auto& named) {
            const job_entry& j = named.second;
            return j.nodes.empty() && !j.gone.empty() && now - j.emptied >= keep_emptied_job;
        });
    }

    std::mutex lock_;
    std::map<std::string, job_entry> jobs_;
};


}  // namespace csp::net::detail
