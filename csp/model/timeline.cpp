#include "csp/model/timeline.hpp"

#include "csp/barrier.hpp"

#include <cstdio>
#include <iomanip>

namespace csp::model {

namespace {
void json_string(std::ostream& os, const std::string& s) {
    os << '"';
    for (char c : s) {
        if (c == '"' || c == '\\') os << '\\' << c;
        else if (static_cast<unsigned char>(c) < 0x20)
            os << "\\u" << std::hex << std::setw(4) << std::setfill('0') << int(c) << std::dec;
        else os << c;
    }
    os << '"';
}

std::string hex(std::uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

// Flow ids stay below 2^53, so every JSON reader holds them exactly: a
// channel's are (channel id << 24 | k), messages' start at 2^52.
constexpr std::uint64_t first_message_flow = std::uint64_t{1} << 52;

std::int64_t wall_clock_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}
}  // namespace

timeline::timeline() : timeline(-1) {}
timeline::timeline(int rank) : rank_(rank), epoch_us_(wall_clock_us()) { install(); }
timeline::~timeline() { stop(); }

double timeline::now() const {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start_).count();
}

void timeline::stop() {
    std::lock_guard lk(lock_);
    if (stopped_) return;
    stopped_ = true;
    stopped_at_ = now();
    uninstall();
}

std::size_t timeline::track_of(const csp::event& e, double t) {
    if (auto it = live_.find(e.process.key()); it != live_.end()) return it->second.first;
    tracks_.push_back({e.process.name(), e.process.daemon()});
    live_[e.process.key()] = {tracks_.size() - 1, t};
    return tracks_.size() - 1;
}

void timeline::add_message(const csp::event& e, std::size_t track, double t) {
    const csp::message_ref& m = *e.message;
    const bool sent = e.what == csp::event::kind::message_sent;
    // The key both ends of the message compute (observer.hpp, message_ref):
    // from.to.s<sequence>.k, or from.to.port.tag.k without a sequence.
    auto& [s, r] = m.sequence != 0 ? sequence_counts_[{m.from, m.to, m.sequence}]
                                   : message_counts_[{m.from, m.to, m.port, m.tag}];
    const std::uint64_t k = sent ? s++ : r++;
    (sent ? sent_ : received_)++;
    std::string what = sent ? "send to node " + std::to_string(m.to) : "receive from node " + std::to_string(m.from);
    what += " (port " + hex(m.port) + ", tag " + hex(m.tag) + ", " + std::to_string(m.bytes) + " bytes)";
    // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) about
    // "literal" + std::string temporaries here.
    std::string key = std::to_string(m.from) + "." + std::to_string(m.to) + ".";
    if (m.sequence != 0) {
        key += 's';
        key += std::to_string(m.sequence);
    } else {
        key += std::to_string(m.port) + "." + std::to_string(m.tag);
    }
    key += '.';
    key += std::to_string(k);
    entries_.push_back({.phase = 'i', .us = t, .track = track, .name = what});
    entries_.push_back({.phase = sent ? 's' : 'f', .us = t, .track = track, .name = "message",
                        .flow = first_message_flow + sent_ + received_, .message = std::move(key)});
}

void timeline::on_event(const csp::event& e) {
    pass_on(e);
    const double t = now();
    std::lock_guard lk(lock_);
    if (stopped_ || !e.process) return;
    switch (e.what) {
    case csp::event::kind::process_begin:
        track_of(e, t);
        break;
    case csp::event::kind::process_end:
        if (auto it = live_.find(e.process.key()); it != live_.end()) {
            tracks_[it->second.first].name = e.process.name();
            entries_.push_back({.phase = 'X', .us = it->second.second, .duration = t - it->second.second,
                                .track = it->second.first, .name = e.process.name()});
            live_.erase(it);
        }
        break;
    case csp::event::kind::channel_read:
    case csp::event::kind::channel_write: {
        if (!e.channel) break;
        const std::size_t tr = track_of(e, t);
        const bool write = e.what == csp::event::kind::channel_write;
        if (tracks_[tr].library) library_channels_.insert(e.channel.id());
        auto& [w, r] = counts_[e.channel.id()];
        const std::uint64_t k = write ? w++ : r++;
        (write ? writes_ : reads_)++;
        const std::uint64_t flow = (e.channel.id() << 24) | (k & 0xffffff);
        const std::string what = (write ? "write " : "read ") + e.channel.label();
        entries_.push_back({.phase = 'i', .us = t, .track = tr, .name = what, .channel = e.channel.id()});
        entries_.push_back({.phase = write ? 's' : 'f', .us = t, .track = tr, .name = e.channel.label(), .flow = flow,
                            .channel = e.channel.id()});
        break;
    }
    case csp::event::kind::message_sent:
    case csp::event::kind::message_received:
        if (e.message) add_message(e, track_of(e, t), t);
        break;
    case csp::event::kind::barrier_sync:
        if (e.barrier)
            entries_.push_back({.phase = 'i', .us = t, .track = track_of(e, t),
                                .name = "sync " + e.barrier->label() + " (phase " + std::to_string(e.detail) + ")"});
        break;
    default:
        break;
    }
}

std::size_t timeline::writes() const {
    std::lock_guard lk(lock_);
    return writes_;
}
std::size_t timeline::reads() const {
    std::lock_guard lk(lock_);
    return reads_;
}
std::size_t timeline::messages_sent() const {
    std::lock_guard lk(lock_);
    return sent_;
}
std::size_t timeline::messages_received() const {
    std::lock_guard lk(lock_);
    return received_;
}

// pid 1: the program's processes; pid 2: the library's.
void timeline::write_entry(std::ostream& os, const entry& e) const {
    os << "{\"ph\": \"" << e.phase << "\", \"pid\": " << (tracks_[e.track].library ? 2 : 1) << ", \"tid\": " << e.track
       << ", \"ts\": " << e.us << ", \"name\": ";
    json_string(os, e.name);
    if (e.phase == 'X') os << ", \"dur\": " << e.duration;
    if (e.phase == 'i') os << ", \"s\": \"t\", \"cat\": \"" << (e.channel ? "channel" : "message") << '"';
    if (e.phase == 's' || e.phase == 'f') {
        os << ", \"cat\": \"" << (e.message.empty() ? "flow" : "message") << "\", \"id\": " << e.flow
           << (e.phase == 'f' ? ", \"bp\": \"e\"" : "");
        if (!e.message.empty()) os << ", \"args\": {\"message\": \"" << e.message << "\"}";
    }
    os << '}';
}

void timeline::write(std::ostream& os) {
    stop();
    std::lock_guard lk(lock_);
    const std::string node = rank_ >= 0 ? "node " + std::to_string(rank_) : "";
    os << "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"csp_node\": " << rank_ << ", \"csp_epoch_us\": " << epoch_us_
       << "}, \"traceEvents\": [\n";
    bool first = true;
    auto sep = [&] { os << (first ? "  " : ",\n  "); first = false; };
    for (int pid : {1, 2}) {
        sep();
        os << "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": " << pid << ", \"args\": {\"name\": ";
        json_string(os,
                    pid == 1 ? (node.empty() ? "processes" : node) : (node.empty() ? "library" : node + ": library"));
        os << "}}";
        sep();
        os << "{\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": " << pid
           << ", \"args\": {\"sort_index\": " << pid << "}}";
    }
    for (std::size_t i = 0; i < tracks_.size(); ++i) {
        sep();
        os << "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " << (tracks_[i].library ? 2 : 1)
           << ", \"tid\": " << i << ", \"args\": {\"name\": ";
        json_string(os, tracks_[i].name);
        os << "}}";
    }
    os << std::fixed << std::setprecision(3);
    for (const auto& e : entries_) {
        // The library's channels show on the library's tracks only.
        if (e.channel != 0 && library_channels_.count(e.channel) &&
            (!tracks_[e.track].library || e.phase == 's' || e.phase == 'f'))
            continue;
        sep();
        write_entry(os, e);
    }
    // Processes still running when the timeline stopped end there.
    for (const auto& [key, at] : live_) {
        sep();
        write_entry(os, {.phase = 'X', .us = at.second, .duration = stopped_at_ - at.second, .track = at.first,
                         .name = tracks_[at.first].name});
    }
    os << "\n]}\n";
}

}  // namespace csp::model
