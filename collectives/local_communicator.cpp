#include "collectives/local_communicator.hpp"

#include <string>

namespace csp::collectives {

namespace {
std::size_t checked_size(int size) {
    if (size < 1) throw usage_error("a local group needs at least one rank, not " + std::to_string(size));
    return static_cast<std::size_t>(size);
}
}  // namespace

local_group::local_group(int size)
    : boxes_(checked_size(size)),
      counters_(static_cast<std::size_t>(size)),
      contexts_(static_cast<std::size_t>(size)) {}

local_group::~local_group() = default;

void local_group::fail(std::exception_ptr error) {
    for (auto& b : boxes_) b.fail(any_source, error);
    std::lock_guard lk(boards_lock_);
    if (!failed_) failed_ = error;
    for (auto& [id, b] : boards_) b->fail(error, 1);
}

void local_group::check_every_message_taken() const {
    for (std::size_t r = 0; r < boxes_.size(); ++r)
        if (const auto report = boxes_[r].unclaimed_report(); !report.empty())
            throw usage_error("run_local: every rank returned, and rank " + std::to_string(r) + " is " + report +
                              ": an answer may be wrong");
}

shared_board& local_group::make_board(std::uint32_t id) {
    std::lock_guard lk(boards_lock_);
    auto& b = boards_[id];
    if (!b) b = std::make_unique<shared_board>(size(), failed_);
    if (id == 0) default_board_.store(b.get(), std::memory_order_release);
    return *b;
}

mailbox<std::any>::envelope local_communicator::take(int from, tag t) const {
    model::recorder* rec = model::recorder::active();
    auto m = [&] {
        model::recorder::quiet_scope hide(rec);
        return group_->box(rank_).take(from, t.bits());
    }();
    if (rec) {
        rec->message(model::direction::receive, m.source, rank_, model_id(t));
        if (from == any_source)
            rec->note("a receive from any rank is recorded as the sender it got in the recorded run");
    }
    return m;
}

}  // namespace csp::collectives
