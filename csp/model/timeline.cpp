#include "csp/model/timeline.hpp"

#include <iomanip>


namespace csp::model {

namespace {
void json_string(std::ostream& os, const std::string& s) {
    os << '"';
    for (char c : s) {
        if (c == '"' || c == '\\') os << '\\' << c;
        else if (static_cast<unsigned char>(c) < 0x20) os << "\\u" << std::hex << std::setw(4) << std::setfill('0') << int(c) << std::dec;
        else os << c;
    }
    os << '"';
}
}  // namespace

timeline::timeline() { install(); }
timeline::~timeline() { stop(); }

double timeline::now() const {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start_).count();
}

void timeline::stop() {
    std::lock_guard lk(lock_);
    if (stopped_) return;
    stopped_ = true;
    uninstall();
}

void timeline::on_event(const csp::event& e) {
    pass_on(e);
    const double t = now();
    std::lock_guard lk(lock_);
    if (stopped_ || !e.process) return;
    switch (e.what) {
    case csp::event::kind::process_begin:
        track_names_.push_back(e.process.name());
        live_[e.process.key()] = {track_names_.size() - 1, t};
        break;
    case csp::event::kind::process_end:
        if (auto it = live_.find(e.process.key()); it != live_.end()) {
            track_names_[it->second.first] = e.process.name();
            entries_.push_back({'X', it->second.second, t - it->second.second, it->second.first, e.process.name()});
            live_.erase(it);
        }
        break;
    case csp::event::kind::channel_read:
    case csp::event::kind::channel_write: {
        auto it = live_.find(e.process.key());
        if (it == live_.end() || !e.channel) break;
        const bool write = e.what == csp::event::kind::channel_write;
        auto& [w, r] = counts_[e.channel.id()];
        const std::uint64_t k = write ? w++ : r++;
        (write ? writes_ : reads_)++;
        const std::uint64_t flow = (e.channel.id() << 24) | (k & 0xffffff);
        const std::string what = (write ? "write " : "read ") + e.channel.label();
        entries_.push_back({'i', t, 0, it->second.first, what});
        entries_.push_back({write ? 's' : 'f', t, 0, it->second.first, e.channel.label(), flow});
        break;
    }
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

void timeline::write(std::ostream& os) {
    stop();
    std::lock_guard lk(lock_);
    os << "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
    bool first = true;
    auto sep = [&] { os << (first ? "  " : ",\n  "); first = false; };
    for (std::size_t i = 0; i < track_names_.size(); ++i) {
        sep();
        os << "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": " << i << ", \"args\": {\"name\": ";
        json_string(os, track_names_[i]);
        os << "}}";
    }
    os << std::fixed << std::setprecision(3);
    for (const auto& e : entries_) {
        sep();
        os << "{\"ph\": \"" << e.phase << "\", \"pid\": 1, \"tid\": " << e.track << ", \"ts\": " << e.us
           << ", \"name\": ";
        json_string(os, e.name);
        if (e.phase == 'X') os << ", \"dur\": " << e.duration;
        if (e.phase == 'i') os << ", \"s\": \"t\", \"cat\": \"channel\"";
        if (e.phase == 's' || e.phase == 'f') os << ", \"cat\": \"flow\", \"id\": " << e.flow << (e.phase == 'f' ? ", \"bp\": \"e\"" : "");
        os << '}';
    }
    os << "\n]}\n";
}

}  // namespace csp::model
