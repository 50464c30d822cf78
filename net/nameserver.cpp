#include "net/nameserver.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include <future>
#include <map>
#include <mutex>
#include <set>

#include "csp/alt.hpp"
#include "csp/runtime.hpp"
#include "csp/process_group.hpp"
#include "iosched/wait.hpp"
#include "net/accept_loop.hpp"
#include "net/errors.hpp"
#include "net/log.hpp"
#include "net/nameserver_protocol.hpp"
#include "net/sheddable.hpp"

namespace csp::net {
namespace {

using detail::line_connection;

// The largest job, and the longest a LOOKUP waits for its rank to register.
constexpr int max_job_size = 1 << 20;
constexpr long max_lookup_wait_ms = 10 * 60 * 1000;

class registry {
public:
    // The answer line to a REGISTER; records the entry under `owner`.
    std::string add(const std::vector<std::string>& w, const void* owner, csp::writer<std::string> notes,
                    std::vector<std::pair<std::string, int>>& mine) {
        if (w.size() != 6) return "ERR usage: REGISTER <job> <rank> <size> <host> <port>";
        const std::string& job = w[1];
        if (!detail::valid_job_name(job)) return "ERR invalid job name '" + job + "'";
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
        auto& j = jobs_[job];
        if (j.size == 0) j.size = size;
        auto fail = [&](std::string why) {
            if (j.nodes.empty()) jobs_.erase(job);
            return "ERR " + why;
        };
        if (size != 0 && size != j.size)
            return fail("job '" + job + "' has " + std::to_string(j.size) + " nodes, not " + std::to_string(size));
        if (rank == -1) {
            // The lowest free rank. No rank below the hint is free, so a run
            // of automatic registrations costs O(log n) each.
            rank = j.first_free;
            for (auto it = j.nodes.lower_bound(rank); it != j.nodes.end() && it->first == rank; ++it) ++rank;
            if (rank >= max_job_size) return fail("job '" + job + "' is full (" + std::to_string(max_job_size) + " nodes)");
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
        if (rank == j.first_free) j.first_free = rank + 1;
        mine.emplace_back(job, rank);
        return "OK " + std::to_string(rank) + " " + std::to_string(j.size);
    }

    // Ends the registrations of `owner`; the job's other nodes are told
    // "GONE <rank>" (each node's connection process writes it).
    void remove(const std::vector<std::pair<std::string, int>>& mine, const void* owner) {
        std::vector<std::pair<csp::writer<std::string>, std::string>> tell;
        {
            std::lock_guard lk(lock_);
            for (const auto& [job, rank] : mine) {
                auto j = jobs_.find(job);
                if (j == jobs_.end()) continue;
                auto n = j->second.nodes.find(rank);
                if (n != j->second.nodes.end() && n->second.owner == owner) {
                    j->second.nodes.erase(n);
                    j->second.first_free = std::min(j->second.first_free, rank);
                    for (auto& [other, e] : j->second.nodes) tell.emplace_back(e.notes, "GONE " + std::to_string(rank));
                }
                if (j->second.nodes.empty()) jobs_.erase(j);
            }
        }
        for (auto& [w, line] : tell) {
            try {
                w.write(line);  // unbounded: never waits
            } catch (const csp::error&) {
                // that node's connection is ending too
            }
        }
    }

    std::optional<endpoint> find(const std::string& job, int rank) {
        std::lock_guard lk(lock_);
        auto j = jobs_.find(job);
        if (j == jobs_.end()) return std::nullopt;
        auto n = j->second.nodes.find(rank);
        if (n == j->second.nodes.end()) return std::nullopt;
        return n->second.at;
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
        csp::writer<std::string> notes;  // lines for that node's registration connection
    };
    struct job_entry {
        int size = 0;  // 0: not known yet (ranks below max_job_size)
        std::map<int, entry> nodes;
        int first_free = 0;  // no rank below it is free
    };
    std::mutex lock_;
    std::map<std::string, job_entry> jobs_;
};

// The client hung up (or its connection broke) while it waited.
struct client_gone {};

// True when the peer of `fd` has closed its side or the connection broke;
// false when it sent more (a request read after this one is answered).
bool hung_up(int fd) {
    char b;
    const ssize_t n = ::recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

std::string answer_lookup(registry& reg, const std::vector<std::string>& w, const csp::reader<bool>& stop, int client) {
    if (w.size() != 4) return "ERR usage: LOOKUP <job> <rank> <wait_ms>";
    int rank;
    long wait_ms;
    try {
        rank = std::stoi(w[2]);
        wait_ms = std::stol(w[3]);
    } catch (const std::exception&) {
        return "ERR malformed LOOKUP: rank and wait_ms must be numbers";
    }
    // Bounded, so that no wait can overflow the clock or hold a client for ever.
    const auto deadline = clock::now() + std::chrono::milliseconds(std::clamp(wait_ms, 0L, max_lookup_wait_ms));
    bool watch_client = true;
    for (;;) {
        if (auto at = reg.find(w[1], rank)) return "AT " + at->host + " " + std::to_string(at->port);
        if (clock::now() >= deadline)
            return "ERR rank " + std::to_string(rank) + " of job '" + w[1] + "' is not registered";
        // Lookups are rare and not urgent: poll the table every few ms. A
        // client that hangs up meanwhile is let go at once, with its fd;
        // one that sent its next request early is no longer watched.
        bool ignored;
        if (watch_client) {
            if (csp::select(csp::input(stop, ignored), csp::timeout(std::chrono::milliseconds(5)),
                            csp::io::readable(client)) == 2) {
                if (hung_up(client)) throw client_gone{};
                watch_client = false;
            }
        } else {
            csp::select(csp::input(stop, ignored), csp::timeout(std::chrono::milliseconds(5)));
        }
    }
}

// One client connection. A node's registration connection stays open: the
// registration lasts as long as it, and the node hears "GONE <rank>" on it
// when another node of its job ends its registration (left, died or was
// killed), so that a peer it never linked to is not waited for in vain.
void serve_client(registry& reg, detail::sheddable& strangers, unique_fd fd, std::string from,
                  csp::reader<bool> stop) {
    const int raw = fd.get();
    line_connection c(std::move(fd), "nameserver client " + from);
    // Declared after c: leaves the strangers before c closes the fd (sheddable.hpp).
    struct forget {
        detail::sheddable& set;
        int fd;
        bool done = false;
        void now() {
            if (!done) set.remove(fd);
            done = true;
        }
        ~forget() { now(); }
    } stranger{strangers, raw};
    std::vector<std::pair<std::string, int>> mine;
    const int owner_tag = 0;
    const void* owner = &owner_tag;  // unique while this process lives
    csp::channel<std::string> notes{"nameserver notes", csp::buffer::unbounded(), csp::sharing::any_to_one};
    auto pending = notes.reader();
    try {
        for (;;) {
            if (!mine.empty()) {
                // Registered: pass on what the job's other nodes did, until
                // the node sends more or hangs up.
                std::string note;
                bool ignored;
                const auto which = csp::select(csp::input(pending, note), csp::io::readable(c.fd()),
                                               csp::input(stop, ignored));
                if (which == 0) {
                    c.write_line(note, clock::now() + std::chrono::seconds(5));
                    continue;
                }
            }
            auto line = c.read_line(clock::time_point::max(), &stop);
            if (!line) break;
            const auto w = detail::split_words(*line);
            std::string answer;
            if (w.empty()) answer = "ERR empty request";
            else if (w[0] == "REGISTER") {
                answer = reg.add(w, owner, notes.writer(), mine);
                if (!mine.empty()) stranger.now();  // a registered node's connection is never shed
            }
            else if (w[0] == "LOOKUP") answer = answer_lookup(reg, w, stop, c.fd());
            else if (w[0] == "LIST" && w.size() == 2) answer = reg.list(w[1]);
            else answer = "ERR unknown request '" + w[0] + "' (REGISTER, LOOKUP or LIST)";
            c.write_line(answer, clock::now() + std::chrono::seconds(5));
        }
    } catch (const csp::poisoned_error&) {
    } catch (const client_gone&) {
    } catch (const std::exception& e) {
        // A registered node's connection ending, however abruptly, is how it
        // leaves (its process may exit while a GONE line is on its way).
        if (mine.empty()) log_line("csp.net nameserver: " + from + ": " + e.what());
    }
    reg.remove(mine, owner);
}

}  // namespace

void nameserver::serve(const endpoint& bind, csp::reader<bool> stop, const std::function<void(endpoint)>& ready) {
    endpoint bound;
    unique_fd listener = listen_on(bind, bound);
    ready(bound);
    registry reg;
    detail::sheddable strangers;  // clients that have not registered
    csp::process_group clients;
    accept_until_stopped(
        listener.get(), stop,
        [&](unique_fd fd) {
            const std::string from = "fd " + std::to_string(fd.get());
            strangers.add(fd.get());
            clients.spawn(csp::proc("nameserver client",
                                    [&reg, &strangers, fd = std::make_shared<unique_fd>(std::move(fd)), from, stop] {
                                        serve_client(reg, strangers, std::move(*fd), from, stop);
                                    }));
        },
        exhaustion_policy{[&] { return strangers.shed_oldest(); },
                          [](const std::string& what) { log_line("csp.net nameserver: " + what); }});
    clients.wait();
}

nameserver::nameserver(endpoint bind) {
    std::promise<endpoint> bound;
    auto ready = bound.get_future();
    thread_ = std::thread([this, bind, &bound] {
        try {
            csp::run([&] { serve(bind, stop_.reader(), [&](endpoint e) { bound.set_value(e); }); });
        } catch (...) {
            try {
                bound.set_exception(std::current_exception());
            } catch (...) {
            }
        }
    });
    try {
        address_ = ready.get();
    } catch (...) {
        thread_.join();
        throw;
    }
}

nameserver::~nameserver() {
    stop_.poison();
    thread_.join();
}

}  // namespace csp::net
