#include "net/switchboard.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <optional>
#include <unordered_set>
#include <vector>

#include "csp/alt.hpp"
#include "csp/deadline_after.hpp"
#include "csp/process_group.hpp"
#include "csp/quiescence.hpp"
#include "net/accept_loop.hpp"
#include "net/deadlock_answers.hpp"
#include "iosched/io_error.hpp"
#include "iosched/wait.hpp"
#include "net/handshake.hpp"
#include "net/nameserver_protocol.hpp"
#include "net/port.hpp"
#include "net/link.hpp"
#include "net/transport.hpp"

namespace csp::net::detail {
namespace {

// Why a peer the nameserver said is gone (peer_gone) is lost: the
// nameserver cannot tell a departure from a death.
constexpr const char* gone_reason = "its registration with the nameserver ended (it left, died or was killed)";

// Every process of a node's network side is a daemon: waiting for the
// network is its job, and the node's user processes are the program.
template <class F>
void spawn_daemon(csp::process_group& group, std::string name, F&& f) {
    group.spawn(csp::proc(std::move(name), std::forward<F>(f)), csp::process_kind::daemon);
}

std::string peer_address(int fd) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "fd " + std::to_string(fd);
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (ss.ss_family == AF_INET) {
        auto* a = reinterpret_cast<sockaddr_in*>(&ss);
        ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
        port = ntohs(a->sin_port);
    } else if (ss.ss_family == AF_INET6) {
        auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
        ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
        port = ntohs(a->sin6_port);
    }
    return std::string(host) + ":" + std::to_string(port);
}

// Reads the node's registration connection (owned by the switch, which
// closes it only after this process ended): the nameserver writes
// "GONE <rank>" when another node of the job ends its registration, and the
// job-wide deadlock detector's waves (deadlock_answers.hpp).
void watch_registration(std::shared_ptr<node_core> core, int fd, std::string buf) {
    auto to_switch = core->to_switch.writer();
    deadlock_answers waves(*core, fd);
    auto take_lines = [&] {
        for (auto nl = buf.find('\n'); nl != std::string::npos; nl = buf.find('\n')) {
            const std::string line = buf.substr(0, nl);
            const auto w = split_words(line);
            buf.erase(0, nl + 1);
            if (waves.handle(w, line)) continue;
            if (w.size() != 2 || w[0] != "GONE") continue;
            try {
                to_switch.write(peer_gone{std::stoi(w[1])});
            } catch (const std::logic_error&) {
            }
        }
        return buf.size() <= max_line;  // else not the nameserver's protocol
    };
    try {
        if (!take_lines()) return;  // what came with the registration's answer
        for (;;) {
            bool ignored;
            if (csp::select(csp::io::readable(fd), csp::input(core->stop.reader(), ignored)) == 1) return;
            char chunk[256];
            const ssize_t n = ::read(fd, chunk, sizeof chunk);
            if (n == 0) return;  // the nameserver went away; links go on without it
            if (n < 0) {
                if (errno == EAGAIN || errno == EINTR) continue;
                return;
            }
            buf.append(chunk, static_cast<std::size_t>(n));
            if (!take_lines()) return;
        }
    } catch (const std::exception&) {
        // poisoned stop (the node is closing), or the connection failed
    }
}

// Waits on the pipe from the launcher (node_options::launcher_fd), which
// nothing writes to: it becomes readable only at its end, when the
// launcher is gone. A launcher that ends by itself waits for its nodes
// first, so that end means it died without stopping them (SIGKILL, a
// crash): this node's process then gets SIGTERM rather than running on
// with no one to stop it.
void watch_launcher(std::shared_ptr<node_core> core, int fd) {
    try {
        bool ignored;
        if (csp::select(csp::io::readable(fd), csp::input(core->stop.reader(), ignored)) == 1) return;
        char byte;
        if (::read(fd, &byte, 1) != 0) return;  // not the end: not this pipe's protocol
    } catch (const csp::io::io_error& e) {
        // The end of a pipe reads as a hang-up; anything else (the node
        // closing, a descriptor closed under us) is not the launcher's end.
        if (e.cond() != csp::io::io_error::condition::hangup) return;
    } catch (const std::exception&) {
        return;  // poisoned stop: the node is closing
    }
    core->fault("the launcher that started this node is gone (killed or crashed): ending this process");
    ::kill(::getpid(), SIGTERM);
}

void run_listener(std::shared_ptr<node_core> core, unique_fd listener, csp::process_group& group) {
    try {
        accept_until_stopped(listener.get(), core->stop.reader(), [&](unique_fd fd) {
            const int raw = fd.get();
            core->greeting.add(raw);
            spawn_daemon(group, "net.greeter", [core, raw, fd = std::make_shared<unique_fd>(std::move(fd))] {
                run_greeter(core, std::move(*fd), peer_address(raw));
            });
        }, exhaustion_policy{[&core] { return core->greeting.shed_oldest(); },
                             [&core](const std::string& what) { core->fault("listener: " + what); }});
    } catch (const std::exception& e) {
        core->fault(std::string("listener stopped: ") + e.what());
    }
}

class switchboard {
public:
    switchboard(std::shared_ptr<node_core> core, registration entry)
        : core_(std::move(core)), entry_(std::move(entry)), in_(core_->to_switch.reader()) {}

    void run(unique_fd listener) {
        spawn_daemon(group_, "net.listener",
                     [this, core = core_, l = std::make_shared<unique_fd>(std::move(listener))] {
                         run_listener(core, std::move(*l), group_);
                     });
        if (core_->options.launcher_fd >= 0)
            spawn_daemon(group_, "net.launcher",
                         [core = core_, fd = core_->options.launcher_fd] { watch_launcher(core, fd); });
        if (entry_.connection)
            spawn_daemon(group_, "net.registration",
                         [core = core_, fd = entry_.connection.get(), unread = entry_.unread] {
                             watch_registration(core, fd, unread);
                         });
        for (;;) {
            switch_input msg;
            if (const auto at = next_deadline(); at == clock::time_point::max()) {
                msg = in_.read();
            } else if (csp::select(csp::input(in_, msg), csp::deadline(at)) == 1) {
                deadline_passed();
                if (finished()) break;
                continue;
            }
            dispatch(std::move(msg));
            if (finished()) break;
        }
        // Connections still in their handshake are ended only now: until the
        // last link settled, one of them could have been a peer's link.
        core_->stop.poison();
        core_->greeting.shut_all();
        group_.wait();
        core_->sum_up_unsent();
        leave_nameserver();
        done_.write(true);
    }

private:
    // Ends the registration. Every link is closed and no process of the
    // switch runs, so this node's traffic counts are final: the job-wide
    // deadlock detector goes on over the nodes left with them
    // (deadlock_waves.hpp).
    void leave_nameserver() {
        if (!entry_.connection) return;
        const std::string line = "FINAL " + std::to_string(core_->traffic_out.load(std::memory_order_relaxed)) + " " +
                                 std::to_string(core_->traffic_in.load(std::memory_order_relaxed)) + "\n";
        try {
            write_all(entry_.connection.get(), line.data(), line.size(), clock::now() + std::chrono::seconds(1),
                      "leaving the nameserver");
        } catch (const net_error&) {
            // The nameserver is gone or stalled: the job is not probed any more.
        }
        entry_.connection.reset();
    }

    // --- inputs -----------------------------------------------------------

    // An input that could bring up a link whose abandoned transport is still
    // exiting (link::retiring) waits until that transport's last exit or the
    // link's loss, in arrival order: two transports of one peer never run
    // at once.
    void dispatch(switch_input msg) {
        const auto held = [&](int peer) {
            const auto it = links_.find(peer);
            if (it == links_.end() || !it->second->retiring()) return false;
            held_.push_back({peer, std::move(msg)});
            return true;
        };
        if (const auto* h = std::get_if<incoming_hello>(&msg); h && held(h->peer)) return;
        if (const auto* r = std::get_if<connect_result>(&msg); r && held(r->peer)) return;
        std::visit([this](auto& m) { handle(m); }, msg);
        if (held_.empty()) return;
        std::vector<held_input> ready;
        std::erase_if(held_, [&](held_input& h) {
            if (links_.at(h.peer)->retiring()) return false;
            ready.push_back(std::move(h));
            return true;
        });
        for (auto& h : ready) dispatch(std::move(h.msg));
    }

    // Sends to this node itself never come here: node::post delivers them.
    void handle(send_request& r) {
        // Links are never erased, so a peer without one has never departed.
        auto it = links_.find(r.to);
        if (it == links_.end()) {
            it = links_.emplace(r.to, std::make_unique<link>(r.to)).first;
            start_connector(*it->second);
        }
        link& l = *it->second;
        if (l.idle()) start_connector(l);  // the peer abandoned its connection (link::abandon)
        const auto not_sent = [&](const std::string& why) {
            core_->not_sent(r.to, unsent_reason::link_ended,
                            "a message to " + port_text(r.frame.head.port) + " of " + core_->peer_name(r.to) +
                                " was not sent: " + why + " (sent before the sender could know)");
        };
        if (l.error()) return r.frame.notice ? void() : not_sent(l.error()->what());
        if (l.state() == link_state::draining) return r.frame.notice ? void() : not_sent(core_->name() + " is closing");
        l.post(std::move(r.frame));
    }

    void handle(connector_connected& c) {
        link& l = *links_.at(c.peer);
        if (l.state() == link_state::connecting) l.connected();
    }

    void handle(connect_result& r) {
        link& l = *links_.at(r.peer);
        l.connector_finished();
        unique_fd fd(r.fd);
        const bool ours_wanted = l.state() == link_state::connecting || l.state() == link_state::handshaking;
        if (!ours_wanted) return;  // the peer's connection won meanwhile, or the link ended; ours closes here
        if (fd.get() >= 0) {
            core_->links_made.fetch_add(1, std::memory_order_relaxed);
            bring_up(l, std::move(fd), std::nullopt);
        } else if (r.duplicate) {
            l.await_crossing(deadline_after(core_->options.connect_timeout));
        } else if (r.left) {
            left_before_link(l);
        } else if (r.retryable && may_retry(l, clock::now())) {
            // A stall is not a death: the queue is kept and the set-up tried
            // again, 100 ms later at first, doubling up to 5 s. A peer whose
            // process is gone ends this through the nameserver (peer_gone).
            const auto pause = std::min<std::chrono::milliseconds>(
                std::chrono::milliseconds(100L << std::min(l.attempts() - 1, 6)), std::chrono::seconds(5));
            if (l.attempts() == 1 && l.queued() != l.notices_queued())  // notices alone: no fault
                core_->fault("setting up the link to " + core_->peer_name(l.peer()) + " failed (" + r.error +
                             "); retrying for up to " + std::to_string(core_->options.liveness_timeout.count()) +
                             " ms, keeping " + std::to_string(l.queued()) + " queued messages");
            l.retry_later(clock::now() + pause);
        } else {
            fail(l, r.retryable && !past_linger()
                        ? "no link could be set up within the liveness timeout of " +
                              std::to_string(core_->options.liveness_timeout.count()) + " ms (" +
                              std::to_string(l.attempts()) + " attempts; the last: " + r.error + ")"
                        : r.error);
        }
    }

    void handle(incoming_hello& h) {
        std::string verdict;
        auto it = links_.find(h.peer);
        const link* l = it == links_.end() ? nullptr : it->second.get();
        // A crossing: ours wins, the lower rank's connection is kept (ours
        // may be up already: the peer accepted it before its own hello
        // reached us, and may have sent over it). Ours never loses a crossing
        // to a higher rank, so a handshaking link here is our own
        // connection's handshake. This is decided before closing: a losing
        // hello that arrives late, while this node closes or after the link
        // ended cleanly (both goodbyes passed), is still only the losing half
        // of a crossing. A lost link is not: a peer declared lost does not
        // come back.
        // Only a connection of ours under way wins: a link between
        // attempts (a retry pending, or idle) takes the peer's, for the
        // peer would otherwise wait for a connection not coming before
        // our next attempt.
        const bool between_attempts = l && l->state() == link_state::connecting && !l->connector_running();
        const bool crossing_we_win =
            l && l->state() != link_state::lost && !between_attempts && core_->rank < h.peer;
        // A closing node still takes the connection of a peer it has
        // messages queued for and no link to yet (ours lost a crossing to a
        // lower rank, or is being retried): that link must come up to
        // deliver them and say goodbye. Anyone else is refused.
        const bool still_wanted = l && !l->error() &&
                                  (l->state() == link_state::connecting || l->state() == link_state::handshaking) &&
                                  !l->unused();
        if (crossing_we_win) {
            verdict = duplicate_reason;
            core_->duplicates.fetch_add(1, std::memory_order_relaxed);
        } else if (closing_ && !still_wanted) {
            verdict = closing_reason(core_->rank);
        } else if (l && l->error()) {
            verdict = "node " + std::to_string(h.peer) + " already ended its link with this node (" +
                      l->error()->what() + ")";
        } else if (l && (l->state() == link_state::up || l->state() == link_state::draining)) {
            verdict = "node " + std::to_string(h.peer) + " is already connected";
        }
        if (!verdict.empty()) {
            h.reply.write(verdict);
            return;
        }
        if (it == links_.end()) it = links_.emplace(h.peer, std::make_unique<link>(h.peer)).first;
        core_->greeting.remove(h.fd);
        core_->links_accepted.fetch_add(1, std::memory_order_relaxed);
        bring_up(*it->second, unique_fd(h.fd), welcome_frame(*core_));
        h.reply.write(std::string());
    }

    void handle(link_down& d) {
        link& l = *links_.at(d.peer);
        if (d.abandoned && gone_.count(d.peer) != 0) {
            // The nameserver said the peer is gone while this connection
            // was up: it will not come back.
            fail(l, gone_reason);
        } else if (d.abandoned && (l.state() == link_state::up || l.state() == link_state::draining) &&
                   !l.error()) {
            // Not a death: the peer's connector gave up on this connection
            // and will make another (or its death comes from the
            // nameserver, or the liveness timeout). See transport.cpp.
            l.abandon();
            core_->abandoned.fetch_add(1, std::memory_order_relaxed);
        } else if (!d.clean) {
            fail(l, d.reason);
        } else if (l.state() != link_state::lost && !l.error()) {
            // A peer that leaves with the job's deadlock report may have left
            // because of it, and its departure would otherwise reach this
            // node's blocked processes before the nameserver's copy of the
            // report does: the report comes first.
            take_deadlock_report(std::move(d.farewell));
            // The goodbye is answered (the peer waits for our end of stream)
            // and the departure recorded before any later send is refused.
            // While this node closes, the goodbye may be the peer's answer to
            // ours: the peer need not have closed anything.
            l.peer_left(static_cast<std::uint32_t>(core_->rank),
                        closing_ ? "the link to " + core_->peer_name(d.peer) + " ended: this node closed"
                                 : core_->peer_name(d.peer) + " has left (it closed its node)",
                        farewell_for(d.peer));
            set_departed(l);
            announce_departure(l);
        }
    }

    void handle(link_process_exited& e) {
        link& l = *links_.at(e.peer);
        const bool was_retiring = l.retiring();
        l.process_exited();
        if (!l.carrier()) core_->links_up.fetch_sub(1, std::memory_order_relaxed);
        // A link left with frames queued and nothing under way once its
        // abandoned transport is gone sets itself up: the peer, which may
        // have nothing to send, need not come back (a closing node too,
        // within its linger).
        if (was_retiring && !l.retiring() && l.idle() && l.queued() > 0 && !past_linger()) start_connector(l);
    }

    // The nameserver says the peer's registration ended. A link that is up
    // notices by itself (its goodbye, or its socket); one being set up is
    // lost now instead of at its timeout; without a link, the peer departed
    // before this node ever talked to it (it left, died or was killed: the
    // nameserver cannot tell), which is announced as a departure (port.hpp).
    void handle(peer_gone& g) {
        if (g.peer == core_->rank || g.peer < 0 || (core_->size > 0 && g.peer >= core_->size)) return;
        gone_.insert(g.peer);
        auto it = links_.find(g.peer);
        if (it == links_.end()) {
            link& l = *links_.emplace(g.peer, std::make_unique<link>(g.peer)).first->second;
            l.lose(core_->peer_name(g.peer) + " is gone: " + gone_reason + " before any link to it existed");
            set_departed(l);
            announce_departure(l);
            return;
        }
        link& l = *it->second;
        if (l.unused()) {
            // Only the peer's abandoned connection ever made it: as above.
            end_link(l, core_->peer_name(g.peer) + " is gone: " + gone_reason + " before any link to it was in use",
                     true);
        } else if (l.state() == link_state::connecting || l.state() == link_state::handshaking) {
            fail(l, gone_reason);
        }
    }

    void handle(job_deadlock& j) { take_deadlock_report(std::move(j.report)); }

    // The job's deadlock report, from the nameserver or a departing peer's
    // goodbye, whichever came first (the other is the same report): this
    // node's blocked processes fail with it (csp/quiescence.hpp) before the
    // switch hands on anything else, so no departure that the deadlock
    // caused overtakes it; and every goodbye this node sends from now on
    // carries it, for peers that have not heard it yet. A quiet runtime
    // idles within microseconds; one that does not within the patience was
    // not quiet (a peer's answer to the report woke a process), and its
    // abort stays asked for, served at its next idle moment if it is quiet
    // then: the switch waits no longer for it.
    void take_deadlock_report(std::string report) {
        if (report.empty() || deadlock_report_) return;
        deadlock_report_ = std::make_shared<const std::string>(std::move(report));
        csp::abort_blocked(report_for_node(*deadlock_report_, core_->rank), std::chrono::milliseconds(100));
    }

    // A goodbye's payload to `peer` (frame.hpp): the deadlock report's
    // bytes, shared by every goodbye, cut to what the peer accepts.
    payload farewell_for(int peer) const {
        if (!deadlock_report_) return {};
        std::size_t n = std::min<std::size_t>(deadlock_report_->size(), header::max_farewell);
        if (const std::uint32_t most = core_->flow.peer_max_frame(peer); most != 0) n = std::min<std::size_t>(n, most);
        return payload::adopt(deadlock_report_, deadlock_report_->data(), n);
    }

    // Credit owed to the peer, or an ask for it, goes out behind the frames
    // already queued; a link that is ending needs neither.
    void handle(flow_signal& f) {
        auto it = links_.find(f.peer);
        if (it == links_.end()) return;
        outgoing frame;
        const auto self = static_cast<std::uint32_t>(core_->rank);
        frame.head = f.credit ? header::credit(self, f.credit) : header::ask_credit(self);
        it->second->signal(std::move(frame));
    }

    void handle(close_request& c) {
        closing_ = true;
        done_ = std::move(c.done);
        linger_until_ = deadline_after(core_->options.linger);
        for (auto& [peer, l] : links_) {
            if (l->state() == link_state::up) {
                l->drain(static_cast<std::uint32_t>(core_->rank), farewell_for(peer));
            } else if (l->unused()) {
                l->lose("this node closed before its link to " + core_->peer_name(peer) + " was in use");
            }
        }
    }

    // --- links ------------------------------------------------------------

    void start_connector(link& l) {
        l.connector_started();
        spawn_daemon(group_, "net.connector", [core = core_, peer = l.peer()] { run_connector(core, peer); });
    }

    void bring_up(link& l, unique_fd fd, std::optional<outgoing> first) {
        l.up(make_transport(*core_, l.peer(), std::move(fd)), core_, group_, std::move(first));
        core_->links_up.fetch_add(1, std::memory_order_relaxed);
        if (closing_) l.drain(static_cast<std::uint32_t>(core_->rank), farewell_for(l.peer()));
    }

    // The link failed: its error is recorded as the peer's departure, then
    // handed to every port (node.hpp, invariant 2). False if it had ended
    // already (link::lose).
    bool fail(link& l, const std::string& reason) {
        return end_link(l, "lost " + core_->peer_name(l.peer()) + ": " + reason, false);
    }

    // The peer refused the link because it is closing: it has left, as if its
    // goodbye had come over a link (link_down), not failed.
    void left_before_link(link& l) {
        end_link(l, core_->peer_name(l.peer()) + " has left (it was closing when this node's connection reached it)",
                 true);
    }

    // Ends the link with error `why`, recorded as the peer's departure. A
    // peer that left is announced as a departure, and so is one a link
    // wanted for notices alone (node::send_notice) never reached, as for a
    // peer that went before any link to it existed; the data messages queued
    // for it are said to be lost (a send that returned must not vanish
    // without a word). Any other end is a fault handed to every port.
    bool end_link(link& l, const std::string& why, bool left) {
        const std::size_t queued = l.queued(), unsent = queued - l.notices_queued();
        if (!l.lose(why)) return false;
        set_departed(l);
        core_->unsent.fetch_add(unsent, std::memory_order_relaxed);
        const auto unsent_note = [&] {
            return std::to_string(unsent) +
                   (unsent == 1 ? " queued message to it was" : " queued messages to it were") + " not sent";
        };
        if (left || (queued > 0 && unsent == 0)) {
            if (unsent != 0) core_->fault(why + ": " + unsent_note());
            announce_departure(l);
            return true;
        }
        core_->fault(why + (unsent != 0 ? " (" + unsent_note() + ")" : ""));
        std::vector<std::shared_ptr<port_entry>> ports;
        {
            std::lock_guard lk(core_->lock);
            for (auto& [id, entry] : core_->ports) ports.push_back(entry);
        }
        for (auto& entry : ports) tell(*entry, l);
        return true;
    }

    // A peer left cleanly: the ports that hear every departure are told, and
    // every port once no peer is left that could send to it (port.hpp). The
    // inbound process delivered all the peer's messages before it reported
    // the goodbye, so they come first.
    // A port told only because this was the last sender says so: its
    // receive waited for any node, and "node 1 has left" alone reads as if
    // node 1 were the one it waited for.
    void announce_departure(const link& l) {
        struct told {
            std::shared_ptr<port_entry> entry;
            bool last_sender;  // told only because no node is left that could send to it
        };
        std::vector<told> ports;
        {
            std::lock_guard lk(core_->lock);
            const bool no_sender_left = core_->size > 0 && core_->departed.size() >= std::size_t(core_->size - 1);
            for (auto& [id, entry] : core_->ports) {
                const bool each = core_->every_departure.count(id) != 0;
                if (no_sender_left || each) ports.push_back({entry, !each});
            }
        }
        for (auto& [entry, last_sender] : ports) {
            if (last_sender)
                tell(*entry, l, std::make_shared<const peer_error>(no_sender_error(*l.error(), entry->channel.name())));
            else
                tell(*entry, l);
        }
    }

    void tell(port_entry& port, const link& l, std::shared_ptr<const peer_error> failure = nullptr) {
        message m;
        m.source = l.peer();
        m.failure = failure ? std::move(failure) : l.error();
        port.deliver(*core_, std::move(m));
    }

    // Sends to the peer fail from now on, also those waiting for its window.
    // The last peer's departure while this node is open leaves no node that
    // could send to it: its ports fail once empty (node_core::no_sender_left).
    // A closing node's links all end too, but there the ports' retirement
    // says what happened.
    void set_departed(const link& l) {
        {
            std::lock_guard lk(core_->lock);
            if (core_->departed.emplace(l.peer(), l.error()->what()).second) {
                core_->departures.fetch_add(1, std::memory_order_release);
                if (!closing_ && !core_->no_sender_left && core_->size > 1 &&
                    core_->departed.size() >= std::size_t(core_->size - 1)) {
                    core_->no_sender_left = l.error();
                    core_->all_departed.store(true, std::memory_order_release);
                }
            }
        }
        core_->flow.fail(l.peer(), l.error());
    }

    void deliver(message m) {
        if (m.port != cached_id_ || !cached_) {
            cached_id_ = m.port;
            cached_ = core_->port_entry_of(m.port);
        }
        cached_->deliver(*core_, std::move(m));
        core_->traffic_in.fetch_add(1, std::memory_order_relaxed);
    }

    // --- time -------------------------------------------------------------

    clock::time_point next_deadline() const {
        clock::time_point at = closing_ ? linger_until_ : clock::time_point::max();
        for (const auto& [peer, l] : links_) at = std::min({at, l->deadline(), l->retry_at()});
        return at;
    }

    void deadline_passed() {
        const auto now = clock::now();
        for (auto& [peer, l] : links_) {
            if (now >= l->retry_at() && l->state() == link_state::connecting && !l->connector_running()) {
                if (past_linger()) {
                    fail(*l, "the node closed while the link was being set up");
                } else {
                    start_connector(*l);
                }
            } else if (now >= l->deadline()) {
                // The peer's crossing connection did not come within one
                // attempt's time: it may be stalled, like a connect that
                // timed out, so the link tries again within the liveness
                // timeout (and the peer, between its attempts, takes ours).
                if (may_retry(*l, now))
                    l->retry_later(now);
                else
                    fail(*l, "its connection to this node never arrived");
            } else if (closing_ && now >= linger_until_ && !l->settled()) {
                if (!fail(*l, "it did not finish closing within " + std::to_string(core_->options.linger.count()) +
                                  " ms"))
                    l->interrupt();
            }
        }
        // Forced; look again in a while rather than spin on a passed deadline.
        if (closing_ && now >= linger_until_) {
            core_->give_up.poison();  // connectors still waiting end now
            linger_over_ = true;
            linger_until_ = now + std::chrono::seconds(1);
        }
    }

    // A link being set up is tried again within the liveness timeout,
    // counted from its first attempt; while the node closes, also within the
    // linger: close() completes the links it has messages queued on.
    bool may_retry(const link& l, clock::time_point now) const {
        return now < deadline_after(l.first_attempt(), core_->options.liveness_timeout) && !past_linger(now);
    }

    bool past_linger(clock::time_point now = clock::now()) const {
        return closing_ && (linger_over_ || now >= linger_until_);
    }

    bool finished() const {
        if (!closing_) return false;
        return std::all_of(links_.begin(), links_.end(), [](const auto& p) { return p.second->settled(); });
    }

    std::shared_ptr<node_core> core_;
    registration entry_;
    csp::reader<switch_input> in_;
    csp::process_group group_;
    std::unordered_map<int, std::unique_ptr<link>> links_;
    struct held_input {
        int peer;
        switch_input msg;
    };
    std::vector<held_input> held_;  // dispatch: waiting for an abandoned transport's exit
    std::unordered_set<int> gone_;  // peers whose registration ended (peer_gone)
    bool closing_ = false;
    bool linger_over_ = false;  // close(): the linger ran out (linger_until_ then paces the checks)
    std::shared_ptr<const std::string> deadlock_report_;  // take_deadlock_report
    clock::time_point linger_until_ = clock::time_point::max();
    csp::writer<bool> done_;
    port_id cached_id_ = 0;
    std::shared_ptr<port_entry> cached_;
};

}  // namespace

void run_switch(std::shared_ptr<node_core> core, unique_fd listener, registration entry) {
    switchboard(std::move(core), std::move(entry)).run(std::move(listener));
}

}  // namespace csp::net::detail
