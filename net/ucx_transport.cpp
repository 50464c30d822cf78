#include "net/ucx_transport.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "csp/alt.hpp"
#include "csp/process.hpp"
#include "csp/timer.hpp"
#include "iosched/io_error.hpp"
#include "iosched/watch.hpp"
#include "net/errors.hpp"
#include "net/socket.hpp"
#include "net/transport.hpp"
#include "net/ucx_worker.hpp"

namespace csp::net::detail {

namespace {

// The news channel of `peer`'s link, if it is a UCX link of this node.
std::optional<csp::writer<ucx_tidings>> news_of(node_core& core, int peer) {
    std::lock_guard lk(core.lock);
    auto it = core.ucx_links.find(peer);
    if (it == core.ucx_links.end()) return std::nullopt;
    return it->second.writer();
}

void tell(node_core& core, int peer, ucx_tidings what) {
    if (auto w = news_of(core, peer)) {
        try {
            w->write(std::move(what));
        } catch (const csp::error&) {
            // the link's liveness process has ended: nobody to tell
        }
    }
}

// Once the node's UCX progress has stopped, nothing more arrives over its UCX
// links: each link's liveness process is told why, so that the link ends
// with that reason and every wait on its peer gets it, instead of waiting
// until the peer's end of connection.
void end_ucx_links(node_core& core, const std::string& why) {
    core.fault(why);
    std::vector<int> peers;
    {
        std::lock_guard lk(core.lock);
        for (const auto& [peer, news] : core.ucx_links) peers.push_back(peer);
    }
    for (int peer : peers) tell(core, peer, {false, why});
}

}  // namespace

// How long the progress process sleeps at most while a send or flush is in
// flight: UCX completes those only while progressed, and not every transport
// (nor an endpoint's wire-up) signals the event fd.
constexpr std::chrono::microseconds in_flight_poll{50};
// How long it sleeps at most with nothing in flight. UCX's event fd should
// end every such sleep that traffic needs; should it ever not (a signal
// lost to a stopped or overloaded process), the node would be deaf to UCX
// for good, its peers' messages and goodbyes never taken. The limit turns
// that into a delay of at most this, counted in node_stats::late_wakeups;
// an idle node pays a look ten times a second.
constexpr std::chrono::milliseconds armed_sleep{100};
// How long the progress process keeps polling after the last thing it saw
// happen, before it sleeps (like the IO scheduler's spin).
constexpr std::chrono::microseconds ucx_spin{50};
// How long of that the spin keeps its core before it yields it between looks
// (at once on an oversubscribed host: node_options::local_size).
constexpr std::chrono::microseconds ucx_spin_alone{5};

// A look takes 50-100 ns, and reading the clock 20-60 of them on a virtual
// machine: the loop reads it once per this many looks (never because a
// message came), which makes the spin's limits this many looks coarser
// (well under 1 us).
constexpr unsigned looks_per_clock_read = 8;
// Looks this far apart on average, with the node's other processes running
// in between, mean the node computes in coarse steps (a task graph's
// bodies): a look then costs a few percent of a step at most, so the spin
// goes on as if traffic had come. Asleep instead, the progress process would
// see a message only when the IO scheduler next polls (a system call per
// csp::yield_to_io(), or a millisecond apart for a process that only
// yields). Fine-grained local traffic (looks well under this apart) still
// lets it sleep after ucx_spin.
constexpr std::chrono::microseconds computing_gap{4};
// How long the progress process stands aside while a receiver polls, at
// most: a poll that ends with the receiver's own message does not call it
// back (the next receive would only send it away again), and the node's
// other traffic must not wait for that receiver's next receive.
constexpr std::chrono::microseconds stand_aside{10};
// The one byte a UCX link's connection carries after its set-up: sent by a
// leaving node once UCX has flushed its goodbye, just before it shuts the
// connection. An end of connection without it is a death.
constexpr char flushed_marker = 'F';

namespace {

// Per runtime (csp::this_process::runtime_id), the count its looks share.
std::mutex runtime_counts_lock;
std::unordered_map<const void*, std::weak_ptr<std::atomic<int>>> runtime_counts;

}  // namespace

ucx_look::ucx_look(node_core& core) : ports(core) {
    std::lock_guard lk(runtime_counts_lock);
    std::weak_ptr<std::atomic<int>>& count = runtime_counts[csp::this_process::runtime_id()];
    runtime_nodes = count.lock();
    if (!runtime_nodes) count = runtime_nodes = std::make_shared<std::atomic<int>>(0);
    runtime_nodes->fetch_add(1);
    std::erase_if(runtime_counts, [](const auto& c) { return c.second.expired(); });
}

ucx_look::~ucx_look() { runtime_nodes->fetch_sub(1); }

namespace {

// The frames of `look` go out in order: messages into their ports (or the
// first for `wanted`, whose channel is still empty, returned instead, see
// poll_port), the flow control's frames after the messages that came before
// them, a goodbye to its link. Then the faults, to their links.
std::optional<message> hand_out(node_core& core, ucx_look& look, port_id wanted = 0,
                                const csp::channel<message>* wanted_channel = nullptr) {
    std::optional<message> mine;
    {
        // Cleared however the frames' hand-out ends: no look would come again.
        struct busy_flag {
            explicit busy_flag(bool& f) : flag(f) { flag = true; }
            ~busy_flag() { flag = false; }
            bool& flag;
        } busy(core.handing_out);
        for (auto& [peer, f] : look.frames) {
            try {
                switch (f.head.op) {
                    case opcode::data: {
                        message m{peer, f.head.port, f.head.tag, std::move(f.body), f.head.type, {}, f.head.sequence};
                        if (wanted_channel && !mine && m.port == wanted && wanted_channel->buffered() == 0) {
                            core.traffic_in.fetch_add(1, std::memory_order_relaxed);
                            // One thread writes it (receivers_poll): no read-modify-write needed.
                            core.taken_polling.store(core.taken_polling.load(std::memory_order_relaxed) + 1,
                                                     std::memory_order_relaxed);
                            mine = std::move(m);
                        } else {
                            look.ports.deliver(std::move(m));
                        }
                        break;
                    }
                    case opcode::credit:
                        core.traffic_in.fetch_add(f.head.tag, std::memory_order_relaxed);
                        core.flow.returned(peer, f.head.tag);
                        break;
                    case opcode::ask_credit:
                        core.traffic_in.fetch_add(1, std::memory_order_relaxed);
                        core.flow.asked(peer);
                        break;
                    case opcode::goodbye:
                        // The peer is leaving: sends to it go through the
                        // switch again, which refuses them once the
                        // departure is recorded.
                        core.ucx->close_direct(peer);
                        tell(core, peer,
                             {true, std::string(reinterpret_cast<const char*>(f.body.data()), f.body.size())});
                        break;
                    default: break;  // ucx_worker lets no other frame through
                }
            } catch (const std::exception& e) {
                look.faults.emplace_back(peer, e.what());
            }
        }
        look.frames.clear();
    }
    if (!look.faults.empty()) {
        // Telling can block, and another look may meanwhile add faults.
        const auto faults = std::exchange(look.faults, {});
        for (auto& [peer, why] : faults) tell(core, peer, {false, why.empty() ? "broken UCX stream" : why});
    }
    return mine;
}

// A liveness process saw its peer's connection end without the flush
// marker: the peer died, and whatever it sent before may still sit in this
// node's worker (in shared memory it wrote while alive). It must reach its
// ports before the loss does, so the worker is progressed until it yields
// nothing more, then each waiting liveness process is answered. Requests are
// taken before the worker is looked at: one made later sets the flag again
// and gets a look of its own.
void drain_for_liveness(node_core& core, ucx_worker& w, ucx_look& look) {
    core.ucx_drain_wanted.store(false, std::memory_order_relaxed);
    std::vector<csp::writer<bool>> asked;
    {
        std::lock_guard lk(core.lock);
        asked.swap(core.ucx_drains);
    }
    // A dead peer adds nothing more; the limit only bounds a live peer's
    // traffic, which the next looks take in order anyway.
    constexpr int max_looks = 1024;
    for (int i = 0; i < max_looks; ++i) {
        const bool active = w.progress(look.frames, look.faults, false).active;
        const bool took = !look.frames.empty() || !look.faults.empty();
        if (took) hand_out(core, look);
        if (!active && !took) break;
    }
    for (auto& a : asked) {
        try {
            a.write(true);  // a buffer of one, written once: never blocks
        } catch (const csp::error&) {
            // the liveness process stopped waiting
        }
    }
}

}  // namespace

void run_ucx_progress(std::shared_ptr<node_core> core) {
    ucx_worker& w = *core->ucx;
    auto stop = core->stop.reader();
    auto poked = core->ucx_poke.reader();
    // Shared with polling receivers (node_core::look), or this process's own.
    const std::shared_ptr<ucx_look> look = core->receivers_poll ? core->look : std::make_shared<ucx_look>(*core);
    try {
        csp::io::watch events(w.event_fd(), csp::io::interest::read);
        const auto keep_core = core->options.oversubscribed() ? std::chrono::microseconds(0) : ucx_spin_alone;
        auto now = std::chrono::steady_clock::now();
        auto last_activity = now;
        auto last_read = now;  // the previous clock read, looks_per_clock_read looks back
        unsigned looks = 0;
        bool recent = false;        // traffic since the clock was last read: last_activity is due to move
        bool others_worked = false;  // the node's other processes ran between looks since that read
        bool unprompted = false;     // this look follows an idle sleep that ended at its limit
        for (;;) {
            if (core->ucx_drain_wanted.load(std::memory_order_relaxed) && !core->handing_out)
                drain_for_liveness(*core, w, *look);
            if (core->pollers > 0) {
                // A receiver polls the worker and hands out what comes: in
                // the ready queue this process would only take turns from it.
                bool ignored;
                if (csp::select(csp::input(poked, ignored), csp::input(stop, ignored), csp::timeout(stand_aside)) == 1)
                    return;
                looks = looks_per_clock_read - 1;  // the next look reads the clock
                // Traffic came, or the poll would not have been: the worker
                // stays unarmed while it flows (an armed worker costs each
                // sender a signal).
                recent = true;
                others_worked = false;
                continue;
            }
            // Spin (progress, let the node's other processes run, progress
            // again) while something happened within ucx_spin: a reply that
            // comes back quickly costs no sleep and no wake-up. Then arm the
            // worker and sleep in the IO scheduler (briefly while a send is
            // in flight, see in_flight_poll).
            if (++looks >= looks_per_clock_read) {
                looks = 0;
                now = std::chrono::steady_clock::now();
                const bool computing =
                    std::exchange(others_worked, false) && now - last_read >= looks_per_clock_read * computing_gap;
                last_read = now;
                if (std::exchange(recent, false) || computing) last_activity = now;
            }
            bool armed = false;
            if (!core->handing_out) {  // else a receiver's hand-out is blocked: let it finish first
                const bool spinning = recent || now - last_activity < ucx_spin;
                const auto [was_armed, active] = w.progress(look->frames, look->faults, !spinning);
                armed = was_armed;
                recent = recent || active;
                if (std::exchange(unprompted, false) && !look->frames.empty())
                    core->late_wakeups.fetch_add(1, std::memory_order_relaxed);
                if (!look->frames.empty() || !look->faults.empty()) hand_out(*core, *look);
            }
            if (!armed) {
                // Only at a clock read: the check takes the channel's lock.
                if (looks == 0 && core->stop.poisoned()) return;
                // Other processes of the node first; once the spin has gone
                // on for a while (at once on an oversubscribed host), other
                // threads of the machine too: with more nodes than cores a
                // spin that keeps its core delays the very peer whose message
                // it waits for, while a reply that comes within microseconds
                // should not pay a system call per look.
                // Only when nothing else of this node was ready: a node whose
                // processes have work (a task graph computing between
                // arrivals) keeps its core.
                const bool others_ran = csp::yield();
                others_worked = others_worked || others_ran;
                if (!others_ran && (keep_core.count() == 0 || (!recent && now - last_activity >= keep_core)))
                    std::this_thread::yield();
                continue;
            }
            csp::io::io_events ev;
            bool ignored;
            // A held frame waits for its landing at most the hold limit:
            // look again as for a send in flight.
            const bool idle = w.in_flight() == 0 && w.held() == 0;
            const std::size_t woke =
                csp::select(events.ready(ev), csp::input(poked, ignored), csp::input(stop, ignored),
                            csp::timeout(idle ? armed_sleep : in_flight_poll));
            if (woke == 2) return;
            unprompted = idle && woke == 3;
            looks = looks_per_clock_read - 1;  // after a sleep, the next look reads the clock
            others_worked = false;  // a sleep is not computing
        }
    } catch (const csp::io::io_error& e) {
        // The IO scheduler ends with the runtime, and the node with it. Any
        // other condition of the worker's event fd (closed, invalid, in
        // error) would leave the node deaf to UCX without a word.
        if (e.cond() != csp::io::io_error::condition::stopped)
            end_ucx_links(*core, std::string("UCX progress stopped: ") + e.what());
    } catch (const csp::error&) {
        // stop poisoned: the node closed
    } catch (const std::exception& e) {
        end_ucx_links(*core, std::string("UCX progress stopped: ") + e.what());
    }
}

std::optional<message> poll_port(node_core& core, port_id port, const csp::channel<message>& ch) {
    ucx_look& look = *core.look;
    if (look.runtime_nodes->load(std::memory_order_relaxed) != 1) return std::nullopt;
    ucx_worker& w = *core.ucx;
    struct polling {  // the progress process stands aside while any receiver polls
        explicit polling(node_core& c) : core(c) { ++core.pollers; }
        ~polling() { --core.pollers; }
        node_core& core;
    } counted(core);
    // The progress process takes over when a poll gives up without the
    // message: it stood aside, and must look again (or arm and sleep) now.
    const auto hand_back = [&] {
        try {
            core.ucx_poke.writer().write(true);  // an overwriting buffer: never blocks
        } catch (const csp::error&) {
            // the node is closing
        }
        return std::nullopt;
    };
    // The clock is first read after looks_per_clock_read looks, not on
    // entry: a reply that comes within them (a ping-pong's) costs no read.
    // The spin's limit starts there, a few looks late.
    std::chrono::steady_clock::time_point last_read{};
    std::chrono::steady_clock::time_point give_up{};
    unsigned looks = 0;
    bool others_worked = false;
    try {
        while (ch.buffered() == 0) {
            if (!core.handing_out) {
                (void)w.progress(look.frames, look.faults, false);
                if (!look.frames.empty() || !look.faults.empty())
                    if (std::optional<message> m = hand_out(core, look, port, &ch)) return m;
            }
            // The node's other processes first, at every look (a process
            // this hand-out woke, a spin on the host board): with nobody
            // else ready a yield costs a few checks. Those that take long
            // have work, and get the thread: the receiver waits on the
            // channel instead.
            others_worked = csp::yield() || others_worked;
            if (++looks < looks_per_clock_read) continue;
            looks = 0;
            const auto now = std::chrono::steady_clock::now();
            if (give_up == std::chrono::steady_clock::time_point{}) {
                give_up = now + ucx_spin;
                last_read = now;
                others_worked = false;
                continue;
            }
            if (now >= give_up || (others_worked && now - last_read >= looks_per_clock_read * computing_gap) ||
                core.stop.poisoned())
                return hand_back();
            last_read = now;
            others_worked = false;
        }
    } catch (const csp::error&) {
        // the IO scheduler or the node stopped: the channel says the rest
    } catch (const std::exception& e) {
        // Not the receiver's failure: it waits on the channel like any
        // other, and the progress process, which sees the same worker, ends
        // the node's UCX traffic with the fault.
        core.receivers_poll = false;
        core.fault(std::string("UCX poll by a receiving process: ") + e.what());
    }
    return hand_back();
}

namespace {

// Asks the progress process to take in everything this node's worker holds
// (drain_for_liveness) and waits for it. Returns what the progress process
// told the link meanwhile (its goodbye, a broken stream), if it did.
// Gives up after goodbye_grace: a progress process blocked handing a frame
// to a full port, or one that stopped (which tells every link why).
std::optional<ucx_tidings> drain_before_the_end(node_core& core, csp::reader<ucx_tidings>& news) {
    csp::channel<bool> done("ucx drain", csp::buffer::fifo(1));
    {
        std::lock_guard lk(core.lock);
        core.ucx_drains.push_back(done.writer());
    }
    core.ucx_drain_wanted.store(true, std::memory_order_relaxed);
    try {
        core.ucx_poke.writer().write(true);  // an overwriting buffer: never blocks
    } catch (const csp::error&) {
        // the node is closing
    }
    bool ok = false;
    ucx_tidings said;
    switch (csp::select(csp::input(done.reader(), ok), csp::input(news, said), csp::timeout(goodbye_grace))) {
        case 0:  // what the look handed out was told before the answer
            if (csp::select(csp::input(news, said), csp::skip()) == 0) return said;
            return std::nullopt;
        case 1: return said;
        default: return std::nullopt;
    }
}

}  // namespace

void run_ucx_liveness(std::shared_ptr<node_core> core, int peer, int fd, csp::reader<ucx_tidings> news) {
    auto to_switch = core->to_switch.writer();
    link_down end{peer, false, {}};
    bool goodbye = false;  // the peer's goodbye came over UCX
    bool flushed = false;  // the peer's marker came: its goodbye has left it
    try {
        csp::io::watch readable(fd, csp::io::interest::read);
        for (;;) {
            csp::io::io_events ev;
            ucx_tidings said;
            if (csp::select(readable.ready(ev), csp::input(news, said)) == 1) {
                if (!said.goodbye) {
                    // From the progress process, which handed out every
                    // frame before the fault.
                    end.reason = said.text;
                    break;
                }
                goodbye = true;
                end.farewell = said.text;
                continue;
            }
            char byte;
            const ssize_t n = ::read(fd, &byte, 1);
            if (n > 0 && byte == flushed_marker && !flushed) {
                flushed = true;
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
            if (n > 0) {
                end.reason =
                    "bytes on the connection of a UCX link, which carries none after its set-up but the end marker";
            } else if (n < 0) {
                end.reason = connection_lost(errno);
            } else if (!goodbye && flushed) {
                // Flushed before the marker: the goodbye is in this node's
                // worker, or on its way to it.
                if (csp::select(csp::input(news, said), csp::timeout(goodbye_grace)) == 0) {
                    goodbye = said.goodbye;
                    (goodbye ? end.farewell : end.reason) = said.text;
                }
            }
            if (!goodbye && !flushed) {
                // An end without the marker: the peer died (or broke the
                // connection). What it sent before goes to its ports first.
                if (const std::optional<ucx_tidings> said_meanwhile = drain_before_the_end(*core, news)) {
                    if (said_meanwhile->goodbye) {
                        goodbye = true;  // killed between its goodbye's flush and the marker
                        end.farewell = said_meanwhile->text;
                    } else if (end.reason.empty()) {
                        end.reason = said_meanwhile->text;
                    }
                }
            }
            end.clean = goodbye && n == 0;
            if (!end.clean && end.reason.empty())
                end.reason = flushed ? "connection closed after the flush marker, but no goodbye came over UCX"
                                     : connection_lost(0);
            break;
        }
    } catch (const csp::io::io_error& e) {
        end.reason = connection_lost(e);
    } catch (const std::exception& e) {
        end.reason = e.what();
    }
    to_switch.write(std::move(end));
    to_switch.write(link_process_exited{peer});
}

void run_ucx_outbound(std::shared_ptr<node_core> core, int peer, int fd, csp::reader<outgoing> queue,
                      csp::reader<bool> interrupted) {
    auto to_switch = core->to_switch.writer();
    ucx_worker& w = *core->ucx;
    const std::uint32_t peer_max_frame = core->flow.peer_max_frame(peer);
    // Until this process ends, user processes may send to the peer without
    // it once its queue has drained (ucx_worker::send_direct).
    w.open_direct(peer, peer_max_frame);
    try {
        for (;;) {
            outgoing f = queue.read();
            if (f.ctl == outgoing::control::abort) break;
            if (f.ctl == outgoing::control::goodbye) {
                f.ctl = outgoing::control::none;
                w.send(peer, std::move(f));
                // Every frame before the goodbye has left once the flush is
                // done; only then may the peer read the end of the connection.
                csp::channel<bool> flushed("ucx flush to node " + std::to_string(peer), csp::buffer::fifo(1));
                w.flush(peer, [out = flushed.writer()](bool ok) { out.write(ok); });
                bool ok = false, ignored;
                if (csp::select(csp::input(flushed.reader(), ok), csp::input(interrupted, ignored)) == 1) break;
                if (!ok) throw net_error("UCX could not flush the frames to node " + std::to_string(peer));
                // The marker tells the peer its end of connection is a
                // departure, not a death (run_ucx_liveness). A peer gone
                // meanwhile refuses it: nothing more to tell.
                (void)::send(fd, &flushed_marker, 1, MSG_NOSIGNAL);
                ::shutdown(fd, SHUT_WR);
                break;
            }
            if (dropped_over_peer_max_frame(*core, peer, peer_max_frame, f)) {
                w.left_long_path(peer);
                continue;
            }
            w.send(peer, std::move(f));
        }
    } catch (const std::exception& e) {
        to_switch.write(link_down{peer, false, e.what()});
    }
    w.close_direct(peer);
    to_switch.write(link_process_exited{peer});
}

}  // namespace csp::net::detail
