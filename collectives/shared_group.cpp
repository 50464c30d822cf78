#include "collectives/shared_group.hpp"

#include <sstream>

#include "csp/config.hpp"

namespace csp::collectives {

shared_options shared_options::from_environment() {
    shared_options o;
    if (auto v = config::choice("CSP_SHARED_CHECK", {"0", "1"})) o.check_every_force = *v == "1";
    return o;
}

shared_group::~shared_group() = default;

std::uint32_t shared_group::enrol(const std::string& name, const detail::slot_kind& k) {
    std::lock_guard lk(lock_);
    const auto id = next_id_++;
    if (!name.empty()) names_[id] = name;
    kinds_named_.try_emplace(k.code, k.label);
    return id;
}

void shared_group::wait_for_force_end(std::unique_lock<lock_type>& lk) {
    while (forcing_) {
        ++waiters_;
        lk.unlock();
        (void)wake_.reader().read();
        lk.lock();
    }
}

void shared_group::orphan(owner& v) {
    auto& list = v.state_ == owner::state::in_flight ? in_flight() : pending();
    slot& s = list[v.slot_];
    if (v.state_ == owner::state::pending) {
        orphans_.emplace_back(s.words);
        s.print = v.pack_contribution(orphans_.back().data());
        s.orphan = static_cast<std::uint32_t>(orphans_.size());
    }
    s.var = nullptr;
}

void shared_group::force(const owner* why) {
    std::unique_lock lk(lock_);
    wait_for_force_end(lk);
    throw_if_failed();
    if (!options_.check_every_force && (why ? why->state_ == owner::state::resolved : pending().empty())) return;

    // This process runs the force point; others of this rank that need
    // it wait in wait_for_force_end until the end below.
    forcing_ = true;
    struct end_of_force {
        shared_group* g;
        std::unique_lock<lock_type>* lk;
        ~end_of_force() {
            if (!lk->owns_lock()) lk->lock();
            g->forcing_ = false;
            const std::size_t n = std::exchange(g->waiters_, 0);
            lk->unlock();
            for (std::size_t i = 0; i < n; ++i) g->wake_.writer().write(0);
        }
    } end{this, &lk};

    // Slots in id order: the same at every rank however its processes
    // interleaved their first updates.
    pending_at_ ^= 1;
    std::vector<slot>& flight = in_flight();
    const auto by_id = [](const slot& a, const slot& b) { return a.id < b.id; };
    if (!std::is_sorted(flight.begin(), flight.end(), by_id))
        std::sort(flight.begin(), flight.end(), by_id);
    const std::size_t n = flight.size();
    std::size_t words = 1 + 2 * n;
    for (const slot& s : flight) words += s.words;
    // The last force point's block, so that a force point allocates
    // nothing once the group has reduced a block of this size.
    detail::block b = std::move(spare_);
    b.resize(words);
    b[0] = (detail::block_fused << 32) | n;
    runs_.clear();
    const detail::slot_kind* last = nullptr;
    bool commutes = true;
    std::size_t at = 1 + 2 * n;
    for (std::size_t i = 0; i < n; ++i) {
        slot& s = flight[i];
        b[1 + 2 * i] = detail::descriptor(s.id, s.kind->code);
        if (s.var) {
            b[2 + 2 * i] = detail::slot_info(s.words, s.var->pack_contribution(b.data() + at));
            s.var->state_ = owner::state::in_flight;
            s.var->slot_ = i;
        } else {
            b[2 + 2 * i] = detail::slot_info(s.words, s.print);
            const detail::block& o = orphans_[s.orphan - 1];
            std::copy(o.begin(), o.end(), b.begin() + static_cast<std::ptrdiff_t>(at));
        }
        at += s.words;
        if (s.kind == last && s.kind->joins) runs_.back().words += s.words;
        else runs_.push_back({s.kind->fold, s.words});
        last = s.kind;
        commutes = commutes && s.kind->commutes;
    }
    orphans_.clear();  // every orphan's slot is in the in-flight list, packed
    const std::size_t updates = stats_.updates - std::exchange(updates_at_force_, stats_.updates);
    lk.unlock();

    detail::block result;
    try {
        result = reduce_(std::move(b), detail::fused_op{&runs_, commutes});
        if (detail::block_kind(result) == detail::block_mismatch) throw usage_error(mismatch_message(result));
        if (detail::block_kind(result) != detail::block_fused || result.size() != words)
            throw csp::error("shared variables: a force point's reduction returned a malformed block");
    } catch (...) {
        lk.lock();
        failed_ = std::current_exception();
        for (slot& s : flight)
            if (s.var) s.var->state_ = owner::state::failed;  // its reads throw failed_
        flight.clear();
        throw;
    }

    lk.lock();
    at = 1 + 2 * n;
    for (slot& s : flight) {
        if (owner* v = s.var) {
            v->resolve(result.data() + at, s.words);
            v->state_ = owner::state::resolved;
        }
        at += s.words;
    }
    flight.clear();
    spare_ = std::move(result);
    ++stats_.reductions;
    stats_.slots_reduced += n;
    if (record_) {
        lk.unlock();
        record_(updates, n);
    }
}

std::string shared_group::describe(const detail::word* d, std::size_t n) const {
    std::ostringstream os;
    os << '{';
    for (std::size_t i = 0; i < n; ++i) {
        const auto id = static_cast<std::uint32_t>(d[2 * i] >> 32);
        const auto code = static_cast<std::uint32_t>(d[2 * i]);
        if (i) os << ", ";
        auto name = names_.find(id);
        os << (name != names_.end() ? name->second : "variable #" + std::to_string(id)) << ": ";
        auto kind = kinds_named_.find(code);
        if (kind != kinds_named_.end()) os << kind->second;
        else os << "op 0x" << std::hex << code << std::dec;
        os << " (" << detail::info_words(d[2 * i + 1]) << " words)";
    }
    os << '}';
    return os.str();
}

std::string shared_group::mismatch_message(const detail::block& r) {
    const std::size_t n1 = r[1];
    const detail::word* d1 = r.data() + 2;
    const std::size_t n2 = r[2 + 2 * n1];
    const detail::word* d2 = d1 + 2 * n1 + 1;
    std::lock_guard lk(lock_);
    // The same updates, but a variable whose replicas differ: the message
    // names it, not two sets that print alike.
    std::string differ;
    bool same_updates = n1 == n2;
    for (std::size_t i = 0; same_updates && i < n1; ++i) {
        same_updates = d1[2 * i] == d2[2 * i] &&
                       detail::info_words(d1[2 * i + 1]) == detail::info_words(d2[2 * i + 1]);
        if (same_updates && d1[2 * i + 1] != d2[2 * i + 1]) {
            const auto id = static_cast<std::uint32_t>(d1[2 * i] >> 32);
            auto name = names_.find(id);
            differ += std::string(differ.empty() ? "" : ", ") +
                      (name != names_.end() ? name->second : "variable #" + std::to_string(id));
        }
    }
    if (same_updates && !differ.empty())
        return "shared variables: the ranks reached a force point holding different values of " + differ +
               " (a shared variable has one value at every rank: give it the same initial value everywhere, "
               "assign cc::same(v) only with a v equal at every rank, and contribute a rank's own value with "
               "x += v)";
    std::vector<detail::word> mine;
    for (const slot& s : in_flight()) {
        mine.push_back(detail::descriptor(s.id, s.kind->code));
        mine.push_back(s.words);
    }
    return "shared variables: the ranks reached a force point with different pending updates: one rank had " +
           describe(d1, n1) + ", another " + describe(d2, n2) + " (this rank, " + std::to_string(rank_) +
           ", had " + describe(mine.data(), mine.size() / 2) +
           "); every rank must make the same updates between force points (the SPMD rule)";
}

}  // namespace csp::collectives
