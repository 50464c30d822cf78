#pragma once
// How a node finds its job, its rank and its peers.
//
// Started by csp-launch, a node reads everything from the environment it sets
// (node_options::from_environment()). Under a cluster launcher the rank and
// size come from that launcher's variables, and the nameserver's address from
// CSP_NAMESERVER:
//
//   rank   CSP_RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK
//   size   CSP_SIZE, SLURM_NTASKS, OMPI_COMM_WORLD_SIZE, PMI_SIZE
//   job    CSP_JOB, else SLURM_JOB_ID.SLURM_STEP_ID, else "default"
//   CSP_NAMESERVER  host:port of a nameserver (csp-nameserver, or csp-launch's own)
//   CSP_TOKEN       the job's shared secret; connections without it are refused
//   CSP_BIND        address the listener binds (default 127.0.0.1: this machine only)
//   CSP_ADVERTISE   address peers should connect to, if not the bound one
//   CSP_MAX_FRAME   largest payload accepted, in bytes (default 4 GiB - 1)
//   CSP_WINDOW      bytes kept in flight to each peer (default 16 MiB)
//   CSP_TRANSPORT   auto, tcp or ucx (read even for options made in code,
//                   unless node_options::transport is set)
//   CSP_KEEP_FREED_MEMORY  0 or 1 (default 1): see keep_freed_memory
//   CSP_TRACE       a file for this node's timeline (see trace below;
//                   csp-launch --trace sets it per node)
//   CSP_TCP_LOCAL_CONGESTION  TCP congestion control of links within this
//                   host (default reno where allowed; "system": the host's)
//   CSP_UCX_EXPECTED_HOLD_US  see expected_hold (default 1000)
//   CSP_LOCAL_SIZE  how many ranks of the job run on this host (csp-launch
//                   sets it; else OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS)
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "net/socket.hpp"

namespace csp::net {

// How a node's links carry their frames once set up (ucx_transport.hpp).
// automatic: UCX with each peer that offers it too (when the build has UCX
// and the node's UCX worker starts), TCP with the others; tcp: TCP always;
// ucx: UCX always, and a link to a peer that offers TCP only fails.
enum class transport_kind { automatic, tcp, ucx };

struct node_options {
    std::string job = "default";
    int rank = -1;  // -1: the nameserver gives the lowest free rank of the job
    int size = 0;   // 0: whatever the nameserver says (the first node to register sets it)

    // Peers are found through a nameserver, or else from a fixed table
    // (peers[r] is rank r's listener; then rank and size are required).
    // With none of nameserver, rank, size and peers the node is a job of
    // one (rank 0 of 1), as a program started without csp-launch.
    std::optional<endpoint> nameserver;
    std::vector<endpoint> peers;

    std::string token;
    endpoint bind{"127.0.0.1", 0};
    std::string advertise;  // host peers connect to; empty: the bound address

    // The largest payload this node accepts from an authenticated peer (4 KiB
    // before the handshake). By default what a frame's 32-bit length can
    // say: a collective's message is as large as the user's value (a
    // broadcast of an 80 MB array is one 80 MB message), and a lower limit
    // fails it at the sender. Lower it to bound what one frame of a peer
    // can make this node allocate.
    std::uint32_t max_frame = std::numeric_limits<std::uint32_t>::max();
    // Bytes this node keeps in flight to one peer: sent and not yet taken
    // from the peer's ports (flow_control.hpp), each message counted as its
    // payload plus 128. A send that would exceed it waits; a message larger
    // than the window is sent once nothing else is in flight.
    std::uint32_t window = 16u << 20;
    std::chrono::milliseconds connect_timeout{30000};  // one attempt: lookup + connect + handshake
    // How long a link that cannot be set up (the peer stalled: stopped,
    // swapping, overloaded) is retried, with backoff, before the peer is
    // declared lost. A peer whose process is gone is declared lost sooner:
    // its registration with the nameserver ends.
    std::chrono::milliseconds liveness_timeout{300000};
    std::chrono::milliseconds handshake_timeout{5000};  // an accepted connection must say hello
    std::chrono::milliseconds linger{10000};            // close(): time allowed to flush
    // Unset: CSP_TRANSPORT, else automatic.
    std::optional<transport_kind> transport;
    // Large messages are encoded into, and decoded out of, fresh buffers of
    // the C heap. By default glibc gives each block over 128 KiB its own
    // mapping and unmaps it when freed, so every large message paid a page
    // fault per 4 KiB of each buffer it passed through (a 1 MiB broadcast
    // between two nodes took 5 ms instead of 0.3). When set, the first node
    // of the process keeps blocks up to 64 MiB on the
    // heap and lets the heap keep up to 256 MiB of freed memory (glibc's
    // M_MMAP_THRESHOLD and M_TRIM_THRESHOLD; MPI libraries do the same
    // through their memory hooks). This is a setting of the whole process:
    // its freed memory is kept for reuse rather than returned to the system.
    bool keep_freed_memory = true;

    // Non-empty: the node records a timeline of the run (csp/model/
    // timeline.hpp, with its rank and the messages it sends and takes) from
    // when it is made until close(), and writes it to this file then.
    // csp-launch --trace merges the nodes' files into one (timeline_merge.hpp).
    std::string trace;

    // The TCP congestion control of links whose two ends are on this host.
    // Over loopback there is no network queue for one to protect, and a
    // pacing one (BBR, the default of several current distributions)
    // only spaces the segments of a large message out in time: a 1 MiB
    // allreduce between two nodes of this machine took 355-585 us under
    // BBR, run by run, and 340-390 under reno, which is built into every
    // Linux kernel and never paces. Every link socket starts under it
    // (before connecting or listening: switched later, a connection keeps
    // BBR's pacing); one whose peer is on another host then goes back to
    // the system's, the network's administrators' choice. Unset: reno where
    // the kernel lets this process choose it (it does unless an
    // administrator took it out of net.ipv4.tcp_allowed_congestion_control),
    // else the system's default. Empty: the system's default. A name: that
    // one, or a usage_error when the node is made.
    std::optional<std::string> local_congestion;

    // How long a large message that comes over UCX before the landing
    // announced for it (node::expect, landing.hpp) may wait for it, its
    // bytes left with the sender. Then it is received as usual, copied by
    // its receive. A receiver whose expectation was wrong costs its sender
    // at most this once; one that computes longer than this between steps
    // gets its rows copied, as without the expectation.
    std::chrono::microseconds expected_hold{1000};

    // How many ranks of the job run on this host; 0: unknown. With more than
    // the CPUs they may use (local_cpus: oversubscribed), an idle node's UCX
    // progress gives its core to the host's other processes at every look
    // instead of keeping it for a few microseconds first: a rank that spins
    // on a core another rank needs delays the very message it waits for
    // (Open MPI turns on mpi_yield_when_idle by the same rule). With every
    // rank of the job here, the collectives' table also takes its crowded
    // rules (node::job_oversubscribed).
    int local_size = 0;
    // How many CPUs the job's ranks on this host may use; 0: this process's
    // CPU affinity mask says (what taskset, a cpuset, a container or a batch
    // system's allocation allow it), unless that mask holds one CPU only,
    // which is a launcher's binding of this rank and says nothing of the
    // job's share: then the host's hardware threads. csp-launch sets
    // CSP_LOCAL_CPUS to the CPUs it may use itself.
    int local_cpus = 0;
    // Whether local_size is more than those CPUs.
    bool oversubscribed() const noexcept;
    // The read end of a pipe whose only writer is the launcher that started
    // this node (csp-launch sets CSP_LAUNCHER_FD=fd:inode), or -1: when the
    // pipe ends, the launcher died without stopping its nodes (SIGKILL, a
    // crash), and the node sends its process SIGTERM, so that no node
    // outlives its launcher. The inode proves the descriptor is that pipe
    // and not one a program made after inheriting the variable.
    int launcher_fd = -1;

    // Made out of line: GCC 12 inlining the defaults of so many strings into
    // a caller's temporary then warns (wrongly) that one may be destroyed
    // uninitialized.
    node_options();

    // Options from the variables above; usage_error naming a malformed one.
    static node_options from_environment();
};

}  // namespace csp::net
