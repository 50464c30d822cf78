#pragma once
// What a deadlock detector spanning several runtimes (csp::net's job-wide
// one, net/deadlock_waves.hpp) needs from one runtime: a sample of its
// program processes taken at a moment when none of them runs, and a way to
// fail the blocked ones with a report found elsewhere.
//
// A runtime that talks to other runtimes is never deadlocked on its own: a
// message may still come. It is *quiet* when every program process (not the
// daemons of services, process_group.hpp) is blocked without a deadline:
// then only a message can move it on. `activity` changes whenever any
// program process has run between two samples (each blocking wait counts,
// and each process started), so two quiet samples with the same activity
// prove nothing ran in between, not merely that it was blocked at both
// moments.
//
// Samples are taken by the scheduler when every worker thread is idle, the
// only moment the process graph holds still; a runtime that never idles
// (every thread busy) gives none, and the caller hears nullopt.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace csp {

struct quiet_sample {
    bool quiet = false;
    std::uint64_t activity = 0;
    // With `describe`: one line per program process, as in a deadlock
    // report ("process 'x' is blocked reading from channel 'y'"), or
    // "process 'x' is ready to run" for one not blocked (only when not quiet).
    std::vector<std::string> blocked;
};

// Waits, sleeping, for the calling process's runtime to idle (up to
// `patience`), and returns its sample then. Call from a daemon process:
// the caller is not one of the processes sampled only if it is a daemon.
std::optional<quiet_sample> sample_quiescence(std::chrono::milliseconds patience, bool describe = false);

// At the runtime's next idle moment, if it is still quiet, every blocked
// program process fails with deadlock_error(report), as on a deadlock found
// by the runtime itself. Waits, sleeping, for that moment (up to
// `patience`), so that nothing the caller does next (a departure it
// delivers) overtakes the report; true if the processes were failed. A
// request the patience ran out on stays: the next idle moment serves it.
bool abort_blocked(std::string report, std::chrono::milliseconds patience = std::chrono::milliseconds(1000));

}  // namespace csp
