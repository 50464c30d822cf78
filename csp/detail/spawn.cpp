#include "csp/detail/spawn.hpp"

namespace csp::detail {

void join_state::describe(std::string& out) const {
    out.append("waiting for ")
        .append(std::to_string(remaining_))
        .append(remaining_ == 1 ? " child process" : " child processes")
        .append(" to finish");
}

process_record* begin_process(void* storage, join_state* join, std::size_t index, int prio, std::string* name,
                              void* frame) {
    const family& kin = join->kin;
    auto* rec = new (storage) process_record(kin.rt, kin.parent, index, name ? std::move(*name) : std::string());
    rec->stack_top = frame;
    rec->daemon = kin.daemon;
    rec->made_at = kin.made_at;
    rec->priority.store(static_cast<std::int8_t>(prio), std::memory_order_relaxed);
    boost::fibers::context::active()->set_properties(rec);
    kin.rt->process_started(rec);
    notify(event::kind::process_begin);
    return rec;
}

void end_process(process_record* rec, join_state* join, std::exception_ptr err) noexcept {
    notify(event::kind::process_end);
    join->kin.rt->process_stopped(rec);
    boost::fibers::context::active()->set_properties(nullptr);  // destroys *rec in place
    join->child_done(std::move(err));
}

}  // namespace csp::detail
