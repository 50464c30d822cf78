#include "net/nameserver.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include <future>
#include <map>
#include <mutex>
#include <set>

#include "csp/alt.hpp"
#include "csp/config.hpp"
#include "csp/deadline_after.hpp"
#include "csp/runtime.hpp"
#include "csp/process_group.hpp"
#include "iosched/scheduler.hpp"
#include "iosched/wait.hpp"
#include "net/accept_loop.hpp"
#include "net/errors.hpp"
#include "net/log.hpp"
#include "net/nameserver_protocol.hpp"
#include "net/nameserver_registry.hpp"
#include "net/sheddable.hpp"

namespace csp::net {
namespace {

using detail::line_connection;
using detail::registry;

// The longest a LOOKUP waits for its rank to register.
constexpr long max_lookup_wait_ms = 10 * 60 * 1000;

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
        if (reg.ended(w[1], rank)) return "ENDED " + std::to_string(rank);
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
void tell_all(detail::tell_list& tell) {
    for (auto& [tell_node, line] : tell) tell_node(line);
    tell.clear();
}

// A registered node's answer to the deadlock detector (deadlock_waves.hpp);
// false if `w` is not one. Malformed answers are ignored: the wave they
// belong to never completes, and the next one starts over.
bool answer_waves(registry& reg, const std::string& line, const std::vector<std::string>& w,
                  const std::vector<std::pair<std::string, int>>& mine,
                  const std::function<void(const std::string&)>& found) {
    if (w.empty() || (w[0] != "QUIET" && w[0] != "BLOCKED" && w[0] != "DESCRIBED" && w[0] != "STATE" &&
                      w[0] != "STATED" && w[0] != "FINAL"))
        return false;
    if (mine.size() != 1 || w.size() < 2) return true;
    const auto& [job, rank] = mine.front();
    detail::tell_list tell;
    try {
        if (w[0] == "FINAL") {
            if (w.size() == 3) reg.final_counts(job, rank, {std::stoull(w[1]), std::stoull(w[2])});
            return true;
        }
        const std::uint64_t wave = std::stoull(w[1]);
        if (w[0] == "QUIET" && w.size() == 6) {
            reg.quiet(job, rank, wave, {w[2] == "1", std::stoull(w[3]), std::stoull(w[4]), std::stoull(w[5])}, tell);
        } else if (w[0] == "BLOCKED" || w[0] == "STATE") {
            // The text is the rest of the line: "BLOCKED <wave> <text>".
            const auto at = line.find(' ', line.find(w[1]));
            std::string text = at == std::string::npos ? std::string() : line.substr(at + 1);
            if (w[0] == "BLOCKED") reg.blocked(job, rank, wave, std::move(text));
            else reg.state(job, rank, wave, std::move(text));
        } else if (w[0] == "STATED" && w.size() == 2) {
            reg.stated(job, rank, wave);
        } else if (w[0] == "DESCRIBED" && w.size() == 4) {
            if (auto report = reg.described(job, rank, wave, w[2] == "1", std::stoull(w[3]), tell); report && found)
                found(*report);
        }
    } catch (const std::exception&) {
        return true;
    }
    tell_all(tell);
    return true;
}

void serve_client(registry& reg, detail::sheddable& strangers, unique_fd fd, std::string from,
                  csp::reader<bool> stop, const std::function<void(const std::string&)>& found) {
    const int raw = fd.get();
    line_connection c(std::move(fd), "nameserver client " + from);
    // Declared after c: leaves the strangers before c closes the fd (sheddable.hpp).
    struct forget {
        detail::sheddable& set;
        int fd;
        ~forget() { set.remove(fd); }
    } stranger{strangers, raw};
    std::vector<std::pair<std::string, int>> mine;
    const int owner_tag = 0;
    const void* owner = &owner_tag;  // unique while this process lives
    csp::channel<std::string> notes{"nameserver notes", csp::buffer::unbounded(), csp::sharing::any_to_one};
    auto pending = notes.reader();
    try {
        for (;;) {
            if (!mine.empty() && !c.has_line()) {
                // Registered: pass on what the job's other nodes did, until
                // the node sends more or hangs up. (A request already read
                // with the last one is served first: waiting for the fd to
                // become readable for it would wait for ever.)
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
            if (!mine.empty() && answer_waves(reg, *line, w, mine, found)) continue;
            std::string answer;
            std::vector<std::string> earlier;  // GONE lines a late joiner missed
            if (w.empty()) answer = "ERR empty request";
            else if (w[0] == "REGISTER") {
                answer = reg.add(w, owner,
                                 [out = notes.writer()](const std::string& line) mutable {
                                     try {
                                         out.write(line);  // unbounded: never waits
                                     } catch (const csp::error&) {
                                         // that node's connection is ending too
                                     }
                                 },
                                 mine, &earlier);
                if (!mine.empty()) strangers.remove(raw);  // a registered node's connection is never shed
            }
            else if (w[0] == "LOOKUP") answer = answer_lookup(reg, w, stop, c.fd());
            else if (w[0] == "LIST" && w.size() == 2) answer = reg.list(w[1]);
            else answer = "ERR unknown request '" + w[0] + "' (REGISTER, LOOKUP or LIST)";
            c.write_line(answer, clock::now() + std::chrono::seconds(5));
            for (const auto& line : earlier) c.write_line(line, clock::now() + std::chrono::seconds(5));
        }
    } catch (const csp::poisoned_error&) {
    } catch (const client_gone&) {
    } catch (const std::exception& e) {
        // A registered node's connection ending, however abruptly, is how it
        // leaves (its process may exit while a GONE line is on its way); a
        // reset is how any client's process ends when it is killed (a node
        // looking a peer up, stopped by its launcher), which is its own
        // business. What else goes wrong with a client is logged, once,
        // naming it (the connection's errors start with its name).
        if (mine.empty() && !c.was_reset()) {
            const std::string text = e.what();
            log_line("csp.net nameserver: " + (text.rfind(c.what(), 0) == 0 ? text : c.what() + ": " + text));
        }
    }
    reg.remove(mine, owner);
}

}  // namespace

struct nameserver::status_desk {
    std::mutex lock;
    std::vector<std::string> asked;  // jobs whose nodes are to be asked
    detail::registry* reg = nullptr;  // while serve() runs
    std::string failure;              // why serve() ended, if it failed after it was ready

    std::vector<std::string> stopped() const {
        return {failure.empty() ? "the nameserver has stopped" : "the nameserver has stopped: " + failure};
    }
};

void nameserver::serve(const endpoint& bind, csp::reader<bool> stop, const std::function<void(endpoint)>& ready,
                       const std::function<void(const std::string&)>& found,
                       std::chrono::milliseconds probe_every, status_desk* desk) {
    endpoint bound;
    unique_fd listener = listen_on(bind, bound);
    // The IO scheduler takes descriptors of its own: a process out of them
    // fails here, before it says it is ready, not once clients rely on it.
    (void)csp::io::this_scheduler();
    ready(bound);
    registry reg;
    detail::sheddable strangers;  // clients that have not registered
    csp::process_group clients;
    if (desk) {
        std::lock_guard lk(desk->lock);
        desk->reg = &reg;
    }
    struct leave_desk {
        status_desk* desk;
        ~leave_desk() {
            if (!desk) return;
            std::lock_guard lk(desk->lock);
            desk->reg = nullptr;
        }
    } leave{desk};
    // The waves process: probes every job each `probe_every`, and passes on
    // the status questions asked meanwhile (at least every 100 ms when there
    // is a desk, even with probes off).
    if (probe_every.count() > 0 || desk)
        clients.spawn(csp::proc("nameserver deadlock waves", [&reg, stop, probe_every, desk] {
            using namespace std::chrono;
            const bool probing = probe_every.count() > 0;
            const milliseconds tick = !desk ? probe_every : probing ? std::min(probe_every, milliseconds(100))
                                                                    : milliseconds(100);
            auto next_probe = steady_clock::now() + probe_every;
            detail::tell_list tell;
            bool ignored;
            while (csp::select(csp::input(stop, ignored), csp::timeout(tick)) == 1) {
                if (probing && steady_clock::now() >= next_probe) {
                    reg.probe(tell);
                    next_probe = steady_clock::now() + probe_every;
                }
                if (desk) {
                    // Asked under the desk's lock, so status() never reads
                    // the previous question's answers as this one's.
                    std::lock_guard lk(desk->lock);
                    for (const auto& job : desk->asked) reg.ask_status(job, tell);
                    desk->asked.clear();
                }
                tell_all(tell);
            }
        }));
    accept_until_stopped(
        listener.get(), stop,
        [&](unique_fd fd) {
            const std::string from = "fd " + std::to_string(fd.get());
            strangers.add(fd.get());
            clients.spawn(csp::proc("nameserver client",
                                    [&reg, &strangers, fd = std::make_shared<unique_fd>(std::move(fd)), from, stop,
                                     &found] { serve_client(reg, strangers, std::move(*fd), from, stop, found); }));
        },
        exhaustion_policy{[&] { return strangers.shed_oldest(); },
                          [](const std::string& what) { log_line("csp.net nameserver: " + what); }});
    clients.wait();
}

std::vector<std::string> nameserver::status(const std::string& job, std::chrono::milliseconds patience) {
    {
        std::lock_guard lk(desk_->lock);
        if (!desk_->reg) return desk_->stopped();
        desk_->asked.push_back(job);
    }
    // The registry's answer for this question replaces the last one's once
    // the waves process asked: wait for it to be asked, then for answers.
    const auto until = csp::deadline_after(patience);
    std::vector<std::string> lines;
    for (;;) {
        bool complete = false;
        {
            std::lock_guard lk(desk_->lock);
            if (!desk_->reg) return desk_->stopped();
            // Still in `asked`: the nodes have not been asked yet.
            if (std::find(desk_->asked.begin(), desk_->asked.end(), job) == desk_->asked.end())
                lines = desk_->reg->status(job, complete);
        }
        if (complete || std::chrono::steady_clock::now() >= until) return lines;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

nameserver::nameserver(endpoint bind, std::chrono::milliseconds probe_every)
    : desk_(std::make_shared<status_desk>()) {
    // `bound` lives on this constructor's frame: the thread touches it only
    // until it has told the address, after which this frame may be gone.
    std::promise<endpoint> bound;
    auto ready = bound.get_future();
    thread_ = std::thread([this, bind, probe_every, &bound] {
        bool told = false;
        try {
            csp::run([&] {
                serve(bind, stop_.reader(),
                      [&](endpoint e) {
                          told = true;
                          bound.set_value(e);
                      },
                      [this](const std::string& report) {
                          std::lock_guard lk(found_lock_);
                          found_.push_back(report);
                      },
                      probe_every, desk_.get());
            });
        } catch (const std::exception& e) {
            if (!told) bound.set_exception(std::current_exception());
            else stopped_by(e.what());
        } catch (...) {
            if (!told) bound.set_exception(std::current_exception());
            else stopped_by("an exception of unknown type");
        }
    });
    try {
        address_ = ready.get();
    } catch (...) {
        thread_.join();
        throw;
    }
}

std::chrono::milliseconds nameserver::probe_interval() {
    const auto ms = csp::config::number("CSP_DEADLOCK_PROBE_MS", 0, 3'600'000);
    return std::chrono::milliseconds(ms ? *ms : 500);
}

std::vector<std::string> nameserver::deadlocks() const {
    std::lock_guard lk(found_lock_);
    return found_;
}

void nameserver::stopped_by(const std::string& what) {
    log_line("csp.net nameserver: stopped serving: " + what);
    std::lock_guard lk(desk_->lock);
    desk_->failure = what;
}

nameserver::~nameserver() {
    stop_.poison();
    thread_.join();
}

}  // namespace csp::net
