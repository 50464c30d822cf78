#pragma once
// Configuration from the environment: every CSP_* variable the libraries
// read, in one table, and the one way they are read.
//
// The convention, for every part:
//   - an options struct default-constructs to fixed defaults and never reads
//     the environment; only its static from_environment() does;
//   - an option set explicitly in the program always beats the environment
//     (the program passes its options struct, or forces a choice);
//   - an unset or empty variable means "the default"; any other invalid value
//     is a usage_error naming the variable and what it accepts.
// The README's configuration table is this table.
#include <array>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "csp/error.hpp"

namespace csp::config {

struct variable {
    std::string_view name;
    std::string_view read_by;   // the from_environment() that reads it
    std::string_view accepts;
    std::string_view meaning;
};

inline constexpr std::array<variable, 24> variables{{
    {"CSP_IO_BACKEND", "csp::io::scheduler_options", "poll (default) | epoll", "the IO scheduler's multiplexer"},
    {"CSP_IO_SPIN_US", "csp::io::scheduler_options", "0..1000000 (default 50)",
     "microseconds an idle worker polls without blocking before it sleeps in poll"},
    {"CSP_RANK", "csp::net::node_options", "0..size-1",
     "this node's rank (else SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK)"},
    {"CSP_SIZE", "csp::net::node_options", "1 or more",
     "nodes in the job (else SLURM_NTASKS, OMPI_COMM_WORLD_SIZE, PMI_SIZE)"},
    {"CSP_JOB", "csp::net::node_options", "1-200 of [A-Za-z0-9._-]", "the job's name (else slurm-<job>.<step>)"},
    {"CSP_NAMESERVER", "csp::net::node_options", "host:port", "where the job's nameserver listens"},
    {"CSP_TOKEN", "csp::net::node_options", "up to 1024 bytes, no newline",
     "the job's shared secret, proved by every connection"},
    {"CSP_BIND", "csp::net::node_options", "host or host:port", "where the node listens"},
    {"CSP_ADVERTISE", "csp::net::node_options", "host", "the host name peers should dial"},
    {"CSP_MAX_FRAME", "csp::net::node_options", "bytes (default 64 MiB)", "the largest frame this node accepts"},
    {"CSP_WINDOW", "csp::net::node_options", "bytes (default 16 MiB)",
     "bytes in flight to one peer before a send waits (flow control)"},
    {"CSP_LIVENESS_MS", "csp::net::node_options", "milliseconds (default 300000)",
     "how long a link that cannot be set up is retried before its peer is lost"},
    {"CSP_TRANSPORT", "csp::net::node_options", "auto (default), tcp or ucx",
     "what carries a link's frames: UCX where both ends offer it, else TCP; or always TCP; or always UCX"},
    {"CSP_TCP_LOCAL_CONGESTION", "csp::net::node_options", "a TCP congestion control or system (default reno)",
     "the congestion control of TCP links within this host; system: the host's default"},
    {"CSP_UCX_EXPECTED_HOLD_US", "csp::net::node_options", "0..60000000 (default 1000)",
     "microseconds a large UCX message announced by expect() waits for its landing before it is received as usual"},
    {"CSP_KEEP_FREED_MEMORY", "csp::net::node_options", "0 or 1 (default 1)",
     "1: large message buffers come from the heap and freed memory is kept for reuse (glibc's mmap and trim "
     "thresholds)"},
    {"CSP_LOCAL_SIZE", "csp::net::node_options", "ranks (default: OMPI_COMM_WORLD_LOCAL_SIZE, else unknown)",
     "how many ranks of the job run on this host (csp-launch sets it); more than its CPUs: idle UCX spins yield at "
     "once"},
    {"CSP_LOCAL_CPUS", "csp::net::node_options",
     "CPUs (default: this process's affinity mask, else the hardware threads)",
     "how many CPUs the job's ranks on this host may use (csp-launch sets it to its own); fewer than CSP_LOCAL_SIZE: "
     "oversubscribed"},
    {"CSP_TRACE", "csp::net::node_options", "a file name",
     "the node records a timeline of its run and writes it there when it closes (csp-launch --trace sets it per node); "
     "a file it cannot create is a `usage_error` when the node is made"},
    {"CSP_LAUNCHER_FD", "csp::net::node_options", "fd:inode (csp-launch sets it)",
     "the read end of a pipe whose writer is the node's launcher: at its end (the launcher died) the node's process "
     "gets SIGTERM"},
    {"CSP_DEADLOCK_PROBE_MS", "csp::net::nameserver", "0..3600000 (default 500)",
     "how often the nameserver probes its jobs for a job-wide deadlock; 0: never"},
    {"CSP_COLLECTIVES", "csp::collectives::selection", "collective=algorithm,...",
     "forces algorithms (names in collectives/registry.hpp)"},
    {"CSP_HOST", "csp::collectives::this_host", "any name (default: the machine's host name)",
     "the host a rank says it is on, for the two-level collectives (collectives/hierarchy.hpp)"},
    {"CSP_SHARED_CHECK", "csp::collectives::shared_options", "0 or 1 (default 0)",
     "1: every force point of shared variables reduces, even with nothing pending, so a rank that skipped an update is "
     "reported"},
}};

// The variable's text, or nothing if it is unset or empty.
inline std::optional<std::string> text(const char* name) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
}

[[noreturn]] inline void invalid(const char* name, const std::string& value, std::string_view accepts) {
    throw usage_error(std::string(name) + "=\"" + value + "\" is not valid: it must be " + std::string(accepts));
}

// One of `choices`, or nothing if unset.
inline std::optional<std::string> choice(const char* name, std::initializer_list<std::string_view> choices) {
    auto v = text(name);
    if (!v) return std::nullopt;
    std::string accepts;
    for (std::string_view c : choices) {
        if (*v == c) return v;
        accepts += (accepts.empty() ? "\"" : " or \"") + std::string(c) + "\"";
    }
    invalid(name, *v, accepts);
}

// A whole number in [lo, hi], or nothing if unset.
inline std::optional<long> number(const char* name, long lo, long hi) {
    auto v = text(name);
    if (!v) return std::nullopt;
    char* end = nullptr;
    const long x = std::strtol(v->c_str(), &end, 10);
    if (*end != '\0' || x < lo || x > hi)
        invalid(name, *v, "a number from " + std::to_string(lo) + " to " + std::to_string(hi));
    return x;
}

}  // namespace csp::config
