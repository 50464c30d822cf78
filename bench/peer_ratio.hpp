#pragma once
// Peers measured in the same run: each benchmark records its figure here, and
// a final pseudo-benchmark per pair reports ours / peer as a counter.
#include <map>
#include <string>

#include <benchmark/benchmark.h>

namespace bench {

inline std::map<std::string, double>& figures() {
    static std::map<std::string, double> f;
    return f;
}

inline void record(const std::string& name, double value) { figures()[name] = value; }

// Registers "<name>" reporting counter "ratio" = figures[ours] / figures[peer]
// (and both figures). It must be registered after the two it compares.
inline void register_ratio(const std::string& name, const std::string& ours, const std::string& peer) {
    benchmark::RegisterBenchmark(name.c_str(), [ours, peer](benchmark::State& state) {
        for (auto _ : state) {
        }
        const auto& f = figures();
        if (!f.count(ours) || !f.count(peer)) {
            state.SkipWithError("run both benchmarks of the pair in the same run to get the ratio");
            return;
        }
        state.counters["ours"] = f.at(ours);
        state.counters["peer"] = f.at(peer);
        state.counters["ratio"] = f.at(ours) / f.at(peer);
    })->Iterations(1);
}

}  // namespace bench
