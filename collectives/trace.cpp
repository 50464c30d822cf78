#include "collectives/trace.hpp"

#include <ostream>

namespace csp::collectives {

void trace_log::record(trace_event e) {
    std::lock_guard lk(lock_);
    e.order = events_.size();
    events_.push_back(std::move(e));
}

std::vector<trace_event> trace_log::events() const {
    std::lock_guard lk(lock_);
    return events_;
}

std::vector<trace_event> trace_log::of_kind(trace_event::kind k) const {
    std::vector<trace_event> out;
    for (auto& e : events())
        if (e.what == k) out.push_back(e);
    return out;
}

std::vector<std::string> trace_log::algorithms() const {
    std::vector<std::string> out;
    for (auto& e : of_kind(trace_event::kind::algorithm)) out.push_back(e.name);
    return out;
}

void trace_log::clear() {
    std::lock_guard lk(lock_);
    events_.clear();
}

void trace_log::print(std::ostream& os) const {
    for (const auto& e : events()) {
        os << e.order << " rank " << e.rank << ' ';
        switch (e.what) {
        case trace_event::kind::algorithm: os << "runs " << e.name; break;
        case trace_event::kind::send: os << "sends to " << e.peer; break;
        case trace_event::kind::receive: os << "received from " << e.peer; break;
        case trace_event::kind::fusion:
            os << "fused " << e.updates << " updates of " << e.slots << " variables into one reduction";
            break;
        }
        os << " (tag " << e.t.stream_id() << '.' << e.t.sequence() << '.' << int(e.t.phase()) << ")\n";
    }
}

}  // namespace csp::collectives
