#pragma once
// A timeline of a real run in the Chrome trace-event format (JSON), which
// Perfetto (ui.perfetto.dev) and chrome://tracing open.
//
//   csp::model::timeline t;          // installs itself as the observer
//   csp::run(root);
//   t.write(file);                   // and uninstalls
//
// It chains like the recorder (chained_observer.hpp).
// One track per process (a complete event from its start to its end); each
// completed channel operation is an instant on its process's track, and
// the k-th write and the k-th read of a channel are joined by a flow arrow
// (channels are FIFO, so they carried the same value).
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "csp/model/chained_observer.hpp"

namespace csp::model {

class timeline final : public chained_observer {
public:
    timeline();
    ~timeline() override;

    void on_event(const csp::event& e) override;

    // Stops recording (if still on) and writes the JSON.
    void write(std::ostream& os);

    // Communications recorded so far.
    std::size_t writes() const;
    std::size_t reads() const;

private:
    struct entry {
        char phase;  // 'X' complete, 'i' instant, 's'/'f' flow ends
        double us;
        double duration = 0;
        std::size_t track;
        std::string name;
        std::uint64_t flow = 0;
    };
    void stop();
    double now() const;

    mutable std::mutex lock_;
    bool stopped_ = false;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
    std::vector<entry> entries_;
    std::vector<std::string> track_names_;
    std::map<const void*, std::pair<std::size_t, double>> live_;  // process -> (track, start)
    std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> counts_;  // channel -> (writes, reads)
    std::size_t writes_ = 0, reads_ = 0;
};

}  // namespace csp::model
