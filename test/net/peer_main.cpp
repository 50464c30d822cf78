// A node in a process of its own, for tests that need one to die or stall.
//   (no argument)  sends increasing numbers to port 1 of node 0 until it is killed
//   receive N      prints "ready" once registered, receives N numbers from
//                  node 0 on port 1, checks they come 0, 1, 2, ... and sends
//                  how many did to port 2 of node 0
//   all-to-all MS  prints "ready" once registered; then for MS milliseconds
//                  sends numbers 0, 1, 2, ... to port 1 of every other node
//                  (about one every 2 ms each), then to each the end marker
//                  -(count + 1); meanwhile receives from all and checks each
//                  sender's numbers come in order. Ends once every peer sent
//                  its marker or failed, printing one line per peer:
//                    from P ok N             all N arrived, in order
//                    from P ended N: ERROR   N arrived in order, then ERROR
//                    from P DISORDER ...     a number came out of order
//   hold [MS]      prints "ready" once registered, receives one number from
//                  node 0 on port 1, sends it back to port 2 of node 0 (MS
//                  milliseconds later, if given), then waits on port 3 (for
//                  ever, unless node 0 goes)
//   row N          prints "ready" once registered, receives one number from
//                  node 0 on port 1, sends node 0 a vector of N doubles
//                  (0.25 k) to port 1 with tag 5, then waits on port 3 (for
//                  ever, unless node 0 goes)
//   burst N [BEFORE [AFTER]]
//                  prints "ready" once registered, receives one number from
//                  node 0 on port 1, answers it on port 2, waits BEFORE ms
//                  (default 0), sends node 0 the numbers 0 .. N-1 on port 1,
//                  waits AFTER ms (default 300: its sends complete), and
//                  dies: exits without closing its node
//   crossed        each node receives from the next on port 3, and nobody
//                  sends: a job-wide deadlock (the error is not caught)
//   busy MS        computes for MS milliseconds, printing nothing
//   oversubscribed prints "oversubscribed R 0|1": whether the node options
//                  from this process's environment say its host has more
//                  ranks than CPUs for them (node_options::oversubscribed)
//   stuck          node 0 computes for ever in a process that yields; the
//                  others wait on port 3 for a message from it
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "csp/process.hpp"

#include "csp/alt.hpp"
#include "csp/runtime.hpp"
#include "csp/timer.hpp"
#include "net/node.hpp"

namespace {

// Port 1 of `self`, opened before the test is told the node is there.
csp::net::port open_and_say_ready(csp::net::node& self,
                                  csp::net::departures heard = csp::net::departures::last_sender) {
    auto inbox = self.open(1, heard);
    std::printf("ready\n");
    std::fflush(stdout);
    return inbox;
}

void all_to_all(std::chrono::milliseconds duration) {
    csp::run([duration] {
        csp::net::node self;
        auto inbox = open_and_say_ready(self, csp::net::departures::each);
        const int n = self.size();
        std::vector<std::string> report(static_cast<std::size_t>(n));
        csp::par(
            [&] {  // sender
                std::vector<std::int64_t> sent(static_cast<std::size_t>(n), 0);
                std::vector<bool> gone(static_cast<std::size_t>(n), false);
                auto send = [&](int to, std::int64_t v) {
                    if (gone[static_cast<std::size_t>(to)]) return;
                    try {
                        self.send(to, 1, v);
                    } catch (const csp::net::peer_error&) {
                        gone[static_cast<std::size_t>(to)] = true;
                    }
                };
                const auto until = csp::clock::now() + duration;
                while (csp::clock::now() < until) {
                    for (int to = 0; to < n; ++to)
                        if (to != self.rank()) send(to, sent[static_cast<std::size_t>(to)]++);
                    csp::select(csp::timeout(std::chrono::milliseconds(2)));
                }
                for (int to = 0; to < n; ++to)
                    if (to != self.rank()) send(to, -(sent[static_cast<std::size_t>(to)] + 1));
            },
            [&] {  // receiver
                std::vector<std::int64_t> next(static_cast<std::size_t>(n), 0);
                int open = n - 1;
                while (open > 0) {
                    try {
                        const csp::net::message m = inbox.receive();
                        const auto from = static_cast<std::size_t>(m.source);
                        const auto v = m.as<std::int64_t>();
                        if (!report[from].empty()) continue;  // reported already (a disorder)
                        if (v >= 0 && v == next[from]) {
                            ++next[from];
                        } else if (v == -(next[from] + 1)) {
                            report[from] = "ok " + std::to_string(next[from]);
                            --open;
                        } else {
                            report[from] = "DISORDER expected " + std::to_string(next[from]) + " got " +
                                           std::to_string(v);
                            --open;
                        }
                    } catch (const csp::net::peer_error& e) {
                        const auto from = static_cast<std::size_t>(e.peer());
                        if (!report[from].empty()) continue;  // it left after its marker
                        report[from] = "ended " + std::to_string(next[from]) + ": " + e.what();
                        --open;
                    }
                }
            });
        for (int p = 0; p < n; ++p)
            if (p != self.rank()) std::printf("from %d %s\n", p, report[static_cast<std::size_t>(p)].c_str());
        // For a failure's trace: how the node's links and UCX traffic went.
        const csp::net::node_stats st = self.stats();
        std::printf("stats links %zu over_ucx %zu faults %zu sent_direct %zu taken_polling %zu late_wakeups %zu\n",
                    st.links, st.links_over_ucx, st.faults, st.sent_direct, st.taken_polling, st.late_wakeups);
        for (const std::string& f : self.faults()) std::printf("fault %s\n", f.c_str());
        std::fflush(stdout);
    });
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 3 && std::string(argv[1]) == "all-to-all") {
        all_to_all(std::chrono::milliseconds(std::strtol(argv[2], nullptr, 10)));
        return 0;
    }
    if (argc == 3 && std::string(argv[1]) == "receive") {
        const std::uint64_t n = std::strtoull(argv[2], nullptr, 10);
        csp::run([n] {
            csp::net::node self;
            auto inbox = open_and_say_ready(self);
            std::uint64_t in_order = 0;
            for (std::uint64_t i = 0; i < n; ++i)
                if (inbox.receive<std::uint64_t>() == i) ++in_order;
            self.send(0, 2, in_order);
        });
        return 0;
    }
    if (argc == 3 && std::string(argv[1]) == "count") {
        // Receives `n` numbers and answers nothing: the exit status says
        // whether each came, in order (0), one was out of order (1), or the
        // link ended first (2).
        const std::uint64_t n = std::strtoull(argv[2], nullptr, 10);
        int status = 0;
        csp::run([n, &status] {
            csp::net::node self;
            auto inbox = open_and_say_ready(self);
            try {
                for (std::uint64_t i = 0; i < n && status == 0; ++i)
                    if (inbox.receive<std::uint64_t>() != i) status = 1;
            } catch (const csp::net::peer_error&) {
                status = 2;
            }
        });
        return status;
    }
    if (argc == 2 && std::string(argv[1]) == "oversubscribed") {
        const csp::net::node_options o = csp::net::node_options::from_environment();
        std::printf("oversubscribed %d %d\n", o.rank, o.oversubscribed() ? 1 : 0);
        return 0;
    }
    if ((argc == 2 || argc == 3) && std::string(argv[1]) == "hold") {
        const std::chrono::milliseconds delay(argc == 3 ? std::strtol(argv[2], nullptr, 10) : 0);
        csp::run([delay] {
            csp::net::node self;
            auto inbox = open_and_say_ready(self);
            const auto v = inbox.receive<std::uint64_t>();
            if (delay.count() > 0) csp::sleep_for(delay);
            self.send(0, 2, v);
            try {
                self.open(3).receive<int>();
            } catch (const csp::net::peer_error&) {
            }
        });
        return 0;
    }
    if (argc == 3 && std::string(argv[1]) == "row") {
        const std::size_t n = std::strtoul(argv[2], nullptr, 10);
        csp::run([n] {
            csp::net::node self;
            auto inbox = open_and_say_ready(self);
            (void)inbox.receive<std::uint64_t>();
            std::vector<double> row(n);
            for (std::size_t k = 0; k < n; ++k) row[k] = 0.25 * static_cast<double>(k);
            self.send(0, 1, row, 5);
            try {
                self.open(3).receive<int>();
            } catch (const csp::net::peer_error&) {
            }
        });
        return 0;
    }
    if (argc == 3 && std::string(argv[1]) == "idle") {
        // A node that writes its pid to argv[2].<rank>, then waits 60 s.
        csp::run([&] {
            csp::net::node self;
            if (FILE* f = std::fopen((std::string(argv[2]) + "." + std::to_string(self.rank())).c_str(), "w")) {
                std::fprintf(f, "%d\n", static_cast<int>(::getpid()));
                std::fclose(f);
            }
            csp::select(csp::timeout(std::chrono::seconds(60)));
        });
        return 0;
    }
    if (argc >= 3 && argc <= 5 && std::string(argv[1]) == "burst") {
        const std::uint64_t n = std::strtoull(argv[2], nullptr, 10);
        const std::chrono::milliseconds before(argc >= 4 ? std::strtol(argv[3], nullptr, 10) : 0);
        const std::chrono::milliseconds after(argc >= 5 ? std::strtol(argv[4], nullptr, 10) : 300);
        csp::run([n, before, after] {
            csp::net::node self;
            auto inbox = open_and_say_ready(self);
            self.send(0, 2, inbox.receive<std::uint64_t>());
            if (before.count() > 0) csp::sleep_for(before);
            for (std::uint64_t i = 0; i < n; ++i) self.send(0, 1, i);
            csp::sleep_for(after);
            std::_Exit(0);
        });
        return 0;
    }
    if (argc == 2 && std::string(argv[1]) == "wrong-port") {
        // Node 0 sends to port 5 of node 1, which waits on port 6, then
        // waits for an answer on port 3 that never comes.
        csp::run([] {
            csp::net::node self;
            if (self.rank() == 0) {
                self.send(1, 5, 42);
                self.open(3).receive<int>();
            } else {
                self.open(6).receive<int>();
            }
        });
        return 0;
    }
    if (argc == 2 && std::string(argv[1]) == "wrong-port-closes") {
        // As above, but node 1 gives up waiting and closes.
        csp::run([] {
            csp::net::node self;
            if (self.rank() == 0) {
                self.send(1, 5, 42);
                self.send(1, 5, 43);
            } else {
                csp::select(csp::timeout(std::chrono::milliseconds(300)));
            }
        });
        return 0;
    }
    if (argc == 2 && std::string(argv[1]) == "crossed") {
        csp::run([] {
            csp::net::node self;
            std::printf("waiting for node %d\n", (self.rank() + 1) % self.size());
            std::fflush(stdout);
            self.open(3).receive<int>();
        });
        return 0;
    }
    if (argc == 2 && std::string(argv[1]) == "stuck") {
        csp::run([] {
            csp::net::node self;
            if (self.rank() != 0) {
                self.open(3).receive<int>();
                return;
            }
            csp::par(csp::proc("computing", [] {
                         std::uint64_t sum = 0;
                         for (std::uint64_t i = 0;; ++i) {
                             sum += i * i;
                             asm volatile("" : "+r"(sum));  // computing, as far as the compiler knows
                             if (i % 100000 == 0) csp::yield();
                         }
                     }),
                     csp::proc("waiting", [&] { self.open(4).receive<int>(); }));
        });
        return 0;
    }
    if (argc == 3 && std::string(argv[1]) == "busy") {
        const auto until =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(std::strtol(argv[2], nullptr, 10));
        while (std::chrono::steady_clock::now() < until) {
        }
        return 0;
    }
    csp::run([] {
        csp::net::node self;  // from CSP_* variables
        for (std::uint64_t i = 0;; ++i) {
            self.send(0, 1, i);
            if (i % 64 == 0) csp::select(csp::timeout(std::chrono::milliseconds(1)));
        }
    });
}
