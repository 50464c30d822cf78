#include "net/switchboard.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <optional>

#include "csp/alt.hpp"
#include "csp/process_group.hpp"
#include "net/accept_loop.hpp"
#include "net/handshake.hpp"
#include "net/link.hpp"

namespace csp::net::detail {
namespace {

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

void run_listener(std::shared_ptr<node_core> core, unique_fd listener, csp::process_group& group) {
    try {
        accept_until_stopped(listener.get(), core->stop.reader(), [&](unique_fd fd) {
            const int raw = fd.get();
            {
                std::lock_guard lk(core->lock);
                core->greeting.insert(raw);
            }
            spawn_daemon(group, "net.greeter", [core, raw, fd = std::make_shared<unique_fd>(std::move(fd))] {
                run_greeter(core, std::move(*fd), peer_address(raw));
            });
        });
    } catch (const std::exception& e) {
        core->fault(std::string("listener stopped: ") + e.what());
    }
}

class switchboard {
public:
    switchboard(std::shared_ptr<node_core> core, registration entry)
        : core_(std::move(core)), entry_(std::move(entry)), in_(core_->to_switch.reader()) {}

    void run(unique_fd listener) {
        spawn_daemon(group_, "net.listener", [this, core = core_, l = std::make_shared<unique_fd>(std::move(listener))] {
            run_listener(core, std::move(*l), group_);
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
            std::visit([this](auto& m) { handle(m); }, msg);
            if (finished()) break;
        }
        group_.wait();
        entry_.connection.reset();  // leaves the nameserver
        done_.write(true);
    }

private:
    struct link {
        enum class state { connecting, awaiting, up, ended };
        state st = state::connecting;
        unique_fd fd;
        csp::channel<outgoing> queue{csp::buffer::unbounded(), csp::sharing::any_to_one};
        csp::writer<outgoing> out = queue.writer();
        bool connector_running = false;
        bool down = false;      // its end has been handled
        int running = 0;        // of its inbound and outbound
        bool goodbye_sent = false;
        clock::time_point await_until = clock::time_point::max();
    };

    // --- inputs -----------------------------------------------------------

    void handle(send_request& r) {
        if (r.to == core_->rank) {
            deliver(message{core_->rank, r.frame.head.port, r.frame.head.tag, std::move(r.frame.body), {}});
            return;
        }
        // Links are never erased, so a peer without one has never departed.
        auto it = links_.find(r.to);
        if (it == links_.end()) {
            it = links_.emplace(r.to, std::make_unique<link>()).first;
            it->second->connector_running = true;
            spawn_daemon(group_, "net.connector", [core = core_, peer = r.to] {
                            run_connector(core, peer);
            });
        }
        link& l = *it->second;
        if (l.st == link::state::ended) {
            core_->fault("a message to port " + std::to_string(r.frame.head.port) + " of " + core_->peer_name(r.to) +
                         " was not sent: " + departed(r.to));
            return;
        }
        l.out.write(std::move(r.frame));
    }

    void handle(connect_result& r) {
        link& l = *links_.at(r.peer);
        l.connector_running = false;
        if (r.fd >= 0) {
            unique_fd fd(r.fd);
            if (l.st == link::state::connecting) {
                core_->links_made.fetch_add(1, std::memory_order_relaxed);
                attach(r.peer, l, std::move(fd), std::nullopt);
            }
            return;  // otherwise the peer's connection won meanwhile; ours closes here
        }
        if (l.st != link::state::connecting) return;
        if (r.duplicate) {
            l.st = link::state::awaiting;
            l.await_until = clock::now() + core_->options.connect_timeout;
            return;
        }
        fail(r.peer, l, r.error);
    }

    void handle(incoming_hello& h) {
        std::string verdict;
        auto it = links_.find(h.peer);
        if (closing_) {
            verdict = "node " + std::to_string(core_->rank) + " is closing";
        } else if (std::string why = departed(h.peer); !why.empty()) {
            verdict = "node " + std::to_string(h.peer) + " already ended its link with this node (" + why + ")";
        } else if (it != links_.end() && core_->rank < h.peer &&
                   (it->second->st == link::state::connecting || it->second->st == link::state::up)) {
            // A crossing: ours wins, the lower rank's connection is kept (ours
            // may even be up already: the peer accepted it before its own
            // hello reached us).
            verdict = duplicate_reason;
            core_->duplicates.fetch_add(1, std::memory_order_relaxed);
        } else if (it != links_.end() && it->second->st == link::state::up) {
            verdict = "node " + std::to_string(h.peer) + " is already connected";
        }
        if (!verdict.empty()) {
            h.reply.write(verdict);
            return;
        }
        if (it == links_.end()) it = links_.emplace(h.peer, std::make_unique<link>()).first;
        {
            std::lock_guard lk(core_->lock);
            core_->greeting.erase(h.fd);
        }
        core_->links_accepted.fetch_add(1, std::memory_order_relaxed);
        attach(h.peer, *it->second, unique_fd(h.fd), welcome_frame(*core_));
        h.reply.write(std::string());
    }

    void handle(link_down& d) {
        link& l = *links_.at(d.peer);
        if (l.down) return;
        l.down = true;
        if (d.clean) {
            set_departed(d.peer, core_->peer_name(d.peer) + " has left");
            if (!l.goodbye_sent) say_goodbye(l);  // answer: the peer waits for our end of file
            return;
        }
        fail(d.peer, l, d.reason);
    }

    void handle(link_process_exited& e) {
        link& l = *links_.at(e.peer);
        if (--l.running == 0) {
            l.fd.reset();
            l.st = link::state::ended;
            core_->links_up.fetch_sub(1, std::memory_order_relaxed);
        }
    }

    void handle(close_request& c) {
        closing_ = true;
        done_ = std::move(c.done);
        linger_until_ = clock::now() + core_->options.linger;
        core_->stop.poison();
        {
            std::lock_guard lk(core_->lock);
            for (int fd : core_->greeting) ::shutdown(fd, SHUT_RDWR);
        }
        for (auto& [peer, l] : links_)
            if (l->st == link::state::up && !l->goodbye_sent) say_goodbye(*l);
    }

    // --- links ------------------------------------------------------------

    void attach(int peer, link& l, unique_fd fd, std::optional<outgoing> first) {
        l.st = link::state::up;
        l.fd = std::move(fd);
        l.running = 2;
        core_->links_up.fetch_add(1, std::memory_order_relaxed);
        const int raw = l.fd.get();
        spawn_daemon(group_, "net.inbound." + std::to_string(peer), [core = core_, peer, raw] {
                    run_inbound(core, peer, raw);
        });
        spawn_daemon(group_, "net.outbound." + std::to_string(peer),
                     [core = core_, peer, raw, q = l.queue.reader(), first = std::move(first)]() mutable {
                                              run_outbound(core, peer, raw, std::move(q), std::move(first));
                     });
        if (closing_) say_goodbye(l);
    }

    void say_goodbye(link& l) {
        outgoing bye;
        bye.head = header::goodbye(static_cast<std::uint32_t>(core_->rank));
        bye.ctl = outgoing::control::goodbye;
        l.out.write(std::move(bye));
        l.goodbye_sent = true;
    }

    // The link to `peer` failed: record why, tell every port, end the link.
    void fail(int peer, link& l, const std::string& reason) {
        const std::size_t lost = l.queue.buffered();
        std::string why = "lost " + core_->peer_name(peer) + ": " + reason;
        set_departed(peer, why);
        core_->fault(why + (lost ? " (" + std::to_string(lost) + " queued messages to it were not sent)" : ""));
        auto failure = std::make_shared<const peer_error>(peer, why);
        std::vector<csp::channel<message>> ports;
        {
            std::lock_guard lk(core_->lock);
            for (auto& [id, ch] : core_->ports) ports.push_back(ch);
        }
        for (auto& ch : ports) {
            message m;
            m.source = peer;
            m.failure = failure;
            ch.writer().write(std::move(m));
        }
        l.down = true;
        if (l.st == link::state::up) {
            outgoing abort;
            abort.ctl = outgoing::control::abort;
            l.out.write(std::move(abort));
            ::shutdown(l.fd.get(), SHUT_RDWR);  // wakes both of its processes
        } else {
            l.st = link::state::ended;
        }
    }

    void set_departed(int peer, std::string why) {
        std::lock_guard lk(core_->lock);
        if (core_->departed.emplace(peer, std::move(why)).second)
            core_->departures.fetch_add(1, std::memory_order_release);
    }
    std::string departed(int peer) const {
        std::lock_guard lk(core_->lock);
        auto it = core_->departed.find(peer);
        return it == core_->departed.end() ? std::string() : it->second;
    }

    void deliver(message m) {
        if (m.port != cached_id_ || !cached_.valid()) {
            cached_id_ = m.port;
            cached_ = core_->port_channel(m.port).writer();
        }
        cached_.write(std::move(m));
    }

    // --- time -------------------------------------------------------------

    clock::time_point next_deadline() const {
        clock::time_point at = closing_ ? linger_until_ : clock::time_point::max();
        for (const auto& [peer, l] : links_)
            if (l->st == link::state::awaiting) at = std::min(at, l->await_until);
        return at;
    }

    void deadline_passed() {
        const auto now = clock::now();
        for (auto& [peer, l] : links_) {
            if (l->st == link::state::awaiting && now >= l->await_until)
                fail(peer, *l, "its connection to this node never arrived");
            else if (closing_ && now >= linger_until_ && l->st != link::state::ended) {
                if (!l->down)
                    fail(peer, *l, "it did not finish closing within " +
                                       std::to_string(core_->options.linger.count()) + " ms");
                else if (l->st == link::state::up)
                    ::shutdown(l->fd.get(), SHUT_RDWR);
            }
        }
        // Forced; look again in a while rather than spin on a passed deadline.
        if (closing_ && now >= linger_until_) linger_until_ = now + std::chrono::seconds(1);
    }

    bool finished() const {
        if (!closing_) return false;
        return std::all_of(links_.begin(), links_.end(), [](const auto& p) {
            return p.second->st == link::state::ended && !p.second->connector_running;
        });
    }

    std::shared_ptr<node_core> core_;
    registration entry_;
    csp::reader<switch_input> in_;
    csp::process_group group_;
    std::unordered_map<int, std::unique_ptr<link>> links_;
    bool closing_ = false;
    clock::time_point linger_until_ = clock::time_point::max();
    csp::writer<bool> done_;
    port_id cached_id_ = 0;
    csp::writer<message> cached_;
};

}  // namespace

void run_switch(std::shared_ptr<node_core> core, unique_fd listener, registration entry) {
    switchboard(std::move(core), std::move(entry)).run(std::move(listener));
}

}  // namespace csp::net::detail
