#pragma once
// What a graph did, when: the task instances each rank ran and the values
// that crossed ranks. A run with run_options::trace fills one per rank;
// collect() gathers them at rank 0, which can write a Chrome trace-event
// file (Perfetto, chrome://tracing: a process per rank, a thread per worker,
// an arrow per transfer from its send to its arrival) or draw a text Gantt
// chart. Times are CLOCK_MONOTONIC nanoseconds: comparable between the nodes
// of one host, not between hosts.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "collectives/communicator.hpp"
#include "dataflow/task_graph.hpp"

namespace csp::dataflow {

struct task_span {
    task_id id = 0;
    std::int32_t step = 0;
    std::int32_t rank = 0;
    std::int32_t worker = 0;
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
};

// One side of a value sent to another rank: `sent` at the producer's rank,
// `arrived` at the consumer's (taken off the network by the graph).
struct transfer_event {
    enum kind_t : std::int32_t { sent = 0, arrived = 1 };
    task_id from = 0;
    task_id to = 0;
    std::int32_t step = 0;  // the consumer's step
    std::int32_t rank = 0;  // where this side happened
    std::int32_t kind = sent;
    std::int32_t pad = 0;
    std::int64_t ns = 0;
};

struct graph_trace {
    std::vector<task_span> tasks;
    std::vector<transfer_event> transfers;

    // Every rank calls it; rank 0 returns everyone's records, the others an
    // empty trace. Uses one tag of `comm`'s default stream.
    template <collectives::communicator C>
    graph_trace collect(C& comm) const {
        const auto t = comm.next_tag(collectives::stream{});
        if (comm.rank() != 0) {
            comm.send(0, t.step(0), tasks);
            comm.send(0, t.step(1), transfers);
            return {};
        }
        graph_trace all = *this;
        for (int r = 1; r < comm.size(); ++r) {
            auto ts = comm.template receive<std::vector<task_span>>(r, t.step(0));
            auto xs = comm.template receive<std::vector<transfer_event>>(r, t.step(1));
            all.tasks.insert(all.tasks.end(), ts.begin(), ts.end());
            all.transfers.insert(all.transfers.end(), xs.begin(), xs.end());
        }
        return all;
    }

    // Fraction of [first start, last end] that some worker of `rank` spent in
    // a task body (1.0: never idle).
    double busy_fraction(int rank) const {
        std::int64_t lo = INT64_MAX, hi = INT64_MIN, busy = 0;
        for (const auto& s : tasks) {
            if (s.rank != rank) continue;
            lo = std::min(lo, s.start_ns);
            hi = std::max(hi, s.end_ns);
            busy += s.end_ns - s.start_ns;
        }
        return hi > lo ? static_cast<double>(busy) / static_cast<double>(hi - lo) : 0.0;
    }

    // Chrome trace-event JSON. `name` labels a task (default "task <id>").
    void write_chrome(std::ostream& os, const std::function<std::string(task_id)>& name = {}) const {
        const std::int64_t t0 = origin();
        auto us = [&](std::int64_t ns) { return static_cast<double>(ns - t0) / 1000.0; };
        auto label = [&](task_id id) { return name ? name(id) : "task " + std::to_string(id); };
        os << "{\"traceEvents\":[\n";
        bool first = true;
        auto sep = [&] {
            if (!first) os << ",\n";
            first = false;
        };
        std::map<int, int> ranks;
        for (const auto& s : tasks) ranks[s.rank] = 1;
        for (const auto& [r, _] : ranks) {
            sep();
            os << R"({"ph":"M","name":"process_name","pid":)" << r << R"(,"tid":0,"args":{"name":"rank )" << r
               << "\"}}";
        }
        // Where each task instance ran, to anchor the arrows.
        std::map<std::tuple<task_id, int>, const task_span*> where;
        for (const auto& s : tasks) {
            where[{s.id, s.step}] = &s;
            sep();
            os << R"({"ph":"X","name":")" << label(s.id) << R"(","cat":"task","pid":)" << s.rank
               << R"(,"tid":)" << s.worker << R"(,"ts":)" << us(s.start_ns) << R"(,"dur":)"
               << us(s.end_ns) - us(s.start_ns) << R"(,"args":{"step":)" << s.step << "}}";
        }
        std::uint64_t flow = 0;
        std::map<std::tuple<task_id, task_id, int>, const transfer_event*> sends;
        for (const auto& x : transfers)
            if (x.kind == transfer_event::sent) sends[{x.from, x.to, x.step}] = &x;
        for (const auto& x : transfers) {
            if (x.kind != transfer_event::arrived) continue;
            auto s = sends.find({x.from, x.to, x.step});
            auto c = where.find({x.to, x.step});
            if (s == sends.end()) continue;
            const int tid = c != where.end() ? c->second->worker : 0;
            ++flow;
            sep();
            os << R"({"ph":"s","name":"transfer","cat":"transfer","id":)" << flow << R"(,"pid":)"
               << s->second->rank << R"(,"tid":0,"ts":)" << us(s->second->ns) << "}";
            sep();
            os << R"({"ph":"f","bp":"e","name":"transfer","cat":"transfer","id":)" << flow << R"(,"pid":)"
               << x.rank << R"(,"tid":)" << tid << R"(,"ts":)" << us(x.ns) << "}";
        }
        os << "\n]}\n";
    }

    // A text Gantt chart: a row per (rank, worker), `columns` characters
    // wide; a cell shows the step (mod 10) of the task that ran longest in
    // it, '.' where the worker was idle, and a row of '^' under each rank
    // marks when values arrived from other ranks.
    void write_gantt(std::ostream& os, int columns = 100) const {
        if (tasks.empty()) return;
        const std::int64_t t0 = origin();
        std::int64_t t1 = t0;
        for (const auto& s : tasks) t1 = std::max(t1, s.end_ns);
        const double cell = static_cast<double>(t1 - t0 + 1) / columns;
        std::map<std::pair<int, int>, std::vector<std::pair<std::int64_t, char>>> rows;
        for (const auto& s : tasks) {
            auto& row = rows[{s.rank, s.worker}];
            row.resize(columns, {0, '.'});
            for (int c = 0; c < columns; ++c) {
                const auto lo = t0 + static_cast<std::int64_t>(c * cell);
                const auto hi = t0 + static_cast<std::int64_t>((c + 1) * cell);
                const auto overlap = std::min(hi, s.end_ns) - std::max(lo, s.start_ns);
                if (overlap > row[c].first) row[c] = {overlap, static_cast<char>('0' + s.step % 10)};
            }
        }
        std::map<int, std::string> arrivals;
        for (const auto& x : transfers) {
            if (x.kind != transfer_event::arrived) continue;
            auto& a = arrivals[x.rank];
            a.resize(columns, ' ');
            const int c = std::clamp(static_cast<int>((x.ns - t0) / cell), 0, columns - 1);
            a[c] = '^';
        }
        os << "time ->  " << (t1 - t0) / 1000 << " us across; digits: the step running, '.': idle, '^': a value "
                                              "arrived from another rank\n";
        int last_rank = -1;
        for (const auto& [key, row] : rows) {
            if (last_rank >= 0 && key.first != last_rank && arrivals.count(last_rank))
                os << "         " << arrivals[last_rank] << "\n";
            last_rank = key.first;
            os << "r" << key.first << " w" << key.second << "    ";
            for (const auto& [_, ch] : row) os << ch;
            os << "\n";
        }
        if (arrivals.count(last_rank)) os << "         " << arrivals[last_rank] << "\n";
    }

private:
    std::int64_t origin() const {
        std::int64_t t0 = INT64_MAX;
        for (const auto& s : tasks) t0 = std::min(t0, s.start_ns);
        for (const auto& x : transfers) t0 = std::min(t0, x.ns);
        return t0 == INT64_MAX ? 0 : t0;
    }
};

}  // namespace csp::dataflow
