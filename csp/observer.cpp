#include "csp/observer.hpp"

#include "csp/detail/process_record.hpp"

namespace csp::detail {

void notify_slow(observer* o, event::kind what, const channel_base* ch, std::size_t detail) {
    o->on_event(event{what, current_process(), ch, detail});
}

}  // namespace csp::detail
