#include "csp/observer.hpp"

#include <vector>

#include "csp/guard.hpp"

#include "csp/detail/channel_core.hpp"
#include "csp/detail/process_record.hpp"

namespace csp {

namespace detail {
// Makes views from the runtime's records; the only code that does.
class view_access {
public:
    static process_view process(const process_record* p) noexcept { return process_view(p); }
    static channel_view channel(const channel_base* c) noexcept { return channel_view(c); }
};

void notify_slow(observer* o, event::kind what, const channel_base* ch, std::size_t detail) {
    o->on_event(event{what, view_access::process(current_process()), view_access::channel(ch), detail});
}

void notify_chose_slow(observer* o, std::span<guard* const> guards, std::size_t chosen) {
    std::vector<offer> offers(guards.size());
    for (std::size_t i = 0; i < guards.size(); ++i) {
        offers[i].enabled = guards[i]->enabled();
        offers[i].channel = view_access::channel(guards[i]->offered_channel(offers[i].write));
    }
    o->on_event(event{event::kind::alt_chose, view_access::process(current_process()), {}, chosen, offers});
}
void notify_sync_slow(observer* o, const barrier& b, std::uint64_t phase) {
    event e{event::kind::barrier_sync, view_access::process(current_process()), {}, static_cast<std::size_t>(phase)};
    e.barrier = &b;
    o->on_event(e);
}
}  // namespace detail

void notify_message_slow(observer* o, event::kind what, const message_ref& m) {
    event e{what, detail::view_access::process(detail::current_process()), {}, 0};
    e.message = &m;
    o->on_event(e);
}

process_view process_view::of_caller() noexcept { return process_view(detail::current_process()); }
std::string process_view::name() const { return p_->label(); }
process_view process_view::parent() const noexcept { return process_view(p_->parent()); }
std::size_t process_view::index() const noexcept { return p_->index(); }
bool process_view::daemon() const noexcept { return p_->daemon; }

std::uint64_t channel_view::id() const noexcept { return c_->id(); }
const std::string& channel_view::name() const noexcept { return c_->name(); }
std::string channel_view::label() const { return c_->label(); }
const buffer& channel_view::buffering() const noexcept { return c_->buffering(); }

}  // namespace csp
