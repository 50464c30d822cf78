#pragma once
// The nameserver: where the nodes of a job find each other and get their
// ranks. Many jobs at once; nodes may come and go at any time; an entry lives
// exactly as long as its node's registration connection, so a node that dies
// leaves nothing stale, and when it ends the job's other nodes are told
// ("GONE <rank>" on their registration connections), so that none waits for
// a peer it never linked to; a node that registers later hears of the ranks
// that ended before it came, right after its OK (while the job has any node
// registered). The protocol is in nameserver_protocol.hpp.
//
//   csp::net::nameserver ns;                     // in this process, on its own thread
//   options.nameserver = ns.address();
//
// The csp-nameserver executable runs the same server as a long-lived daemon.
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <vector>
#include <memory>
#include <thread>

#include "csp/channel.hpp"
#include "net/socket.hpp"

namespace csp::net {

class nameserver {
public:
    // Listens on `bind` (default: loopback, a free port) from a thread of
    // its own; probes its jobs for deadlocks every `probe_every` (default
    // probe_interval(); 0: never).
    explicit nameserver(endpoint bind = {"127.0.0.1", 0}, std::chrono::milliseconds probe_every = probe_interval());
    ~nameserver();
    nameserver(const nameserver&) = delete;
    nameserver& operator=(const nameserver&) = delete;

    endpoint address() const { return address_; }

    // The deadlock reports of the jobs served (deadlock_waves.hpp), oldest first.
    std::vector<std::string> deadlocks() const;

    // What every process of `job` is doing, one line each ("node 1: process
    // 'main' is blocked waiting for ...", "node 0: busy: ..."), asked of its
    // nodes now and waited for up to `patience`; a node that did not answer
    // in time says so. For csp-launch --timeout.
    std::vector<std::string> status(const std::string& job, std::chrono::milliseconds patience);

    // Where status() hands its questions to the serving processes, which
    // alone may talk to the nodes.
    struct status_desk;

    // Serves on the calling process until `stop` is poisoned; `ready` is
    // called with the bound address once connections are accepted, `found`
    // with each job-wide deadlock report.
    static void serve(const endpoint& bind, csp::reader<bool> stop, const std::function<void(endpoint)>& ready,
                      const std::function<void(const std::string&)>& found = {},
                      std::chrono::milliseconds probe_every = probe_interval(), status_desk* desk = nullptr);

    // How often every job is probed for a job-wide deadlock:
    // CSP_DEADLOCK_PROBE_MS (0 turns the detector off), else 500 ms.
    static std::chrono::milliseconds probe_interval();

private:
    // A failure of the serving thread after it was ready: logged, and named
    // by status() from then on.
    void stopped_by(const std::string& what);

    mutable std::mutex found_lock_;
    std::vector<std::string> found_;
    std::shared_ptr<status_desk> desk_;
    csp::channel<bool> stop_{"nameserver stop"};
    endpoint address_;
    std::thread thread_;
};

}  // namespace csp::net
