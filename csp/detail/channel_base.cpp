#include "csp/detail/channel_core.hpp"
#include "csp/detail/runtime_core.hpp"

// channel_base's error paths and descriptions: cold, so compiled here once
// rather than in every file that uses a channel.
namespace csp::detail {

std::string channel_base::label() const {
    if (!name_.empty()) return "channel '" + name_ + "'";
    std::string l = "channel#" + std::to_string(id_);
    if (made_at_.line() != 0) l.append(" (made at ").append(source_place(made_at_)).append(")");
    return l;
}

void channel_base::taken_into_this_runtime() noexcept {
    const process_record* p = current_process();
    note_runtime(p != nullptr ? static_cast<const void*>(p->runtime())
                              : static_cast<const void*>(runtime_of_this_thread));
}

void channel_base::note_runtime(const void* rt) noexcept {
    if (rt == nullptr) return;
    const void* first = nullptr;
    if (!first_runtime_.compare_exchange_strong(first, rt, std::memory_order_relaxed) && first != rt)
        between_runtimes_.store(true, std::memory_order_relaxed);
}

void channel_base::throw_poisoned() const { throw poisoned_error(label()); }

retired_error channel_base::retired_error_for(side s) const {
    return retired_error(label() + (s == reading ? ": every writer has retired" : ": every reader has retired"));
}

void channel_base::throw_retired(side s) const { throw retired_error_for(s); }

usage_error channel_base::single_side_error(side s) const {
    return usage_error(label() + " has a single " + (s == reading ? "reader" : "writer") +
                       " but two processes wait to " + (s == reading ? "read" : "write"));
}

void channel_base::refuse_and_unlock(side s) {
    const bool poisoned = poisoned_;
    const bool retired = retired_[s == reading ? writing : reading];
    lock_.unlock();
    if (poisoned) throw poisoned_error(label());
    if (retired) throw_retired(s);
    throw single_side_error(s);
}

void channel_base::site::describe(std::string& out) const {
    out.append(side_ == reading ? "reading from " : "writing to ").append(ch_->label());
}

bool channel_base::site::reachable_from_outside() const { return ch_->reachable_from_outside(); }

}  // namespace csp::detail
