#include "csp/model/recorder.hpp"

#include <algorithm>
#include <set>
#include <sstream>

#include "csp/barrier.hpp"


namespace csp::model {

namespace {
std::atomic<recorder*> current{nullptr};
}

recorder::recorder() {
    install();
    current.store(this);
}

recorder::~recorder() {
    if (!taken_) take();
}

recorder* recorder::active() { return current.load(); }

network recorder::take() {
    std::lock_guard lk(lock_);
    if (!taken_) {
        taken_ = true;
        uninstall();
        current.store(nullptr);
        for (auto& [id, use] : channels_)
            if (use.unbounded)
                net_.channels[use.model].capacity =
                    std::max<std::size_t>(1, net_.count(use.model, direction::send));
        for (auto& [key, c] : messages_)
            net_.channels[c].capacity = std::max<std::size_t>(1, net_.count(c, direction::send));
        resolve_barriers();
        net_.notes.push_back("values are not recorded: a communication is its channel and direction");
    }
    return net_;
}

void recorder::resolve_barriers() {
    // Members of each phase of each barrier.
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::set<std::size_t>> phases;
    for (const auto& r : syncs_) phases[{r.barrier, r.phase}].insert(r.process);
    // One model barrier per barrier and set of members, numbered in order of
    // first sync, like channels.
    std::map<std::pair<std::uint64_t, std::set<std::size_t>>, std::size_t> model;
    for (const auto& r : syncs_) {
        const auto& members = phases.at({r.barrier, r.phase});
        auto it = model.find({r.barrier, members});
        if (it == model.end()) {
            const std::size_t b = net_.add_barrier(identifier("b", net_.barriers.size(), barrier_names_.at(r.barrier)));
            it = model.emplace(std::make_pair(r.barrier, members), b).first;
        }
        net_.processes[r.process].body.at(r.at).barrier = it->second;
    }
}

recorder::live* recorder::find_live(const void* process) {
    auto it = live_.find(process);
    return it == live_.end() ? nullptr : &it->second;
}

void recorder::add_step(const void* process, step s) {
    if (live* l = find_live(process); l && l->quiet == 0) net_.processes[l->model].body.push_back(std::move(s));
}

void recorder::on_event(const csp::event& e) {
    pass_on(e);
    std::lock_guard lk(lock_);
    if (taken_ || !e.process) return;
    const void* self = e.process.key();
    switch (e.what) {
    case csp::event::kind::process_begin: {
        const std::size_t m = net_.add_process(e.process.name());
        net_.processes[m].daemon = e.process.daemon();
        live_[self] = live{m, {}, 0};
        if (live* parent = find_live(e.process.parent().key()); parent && !parent->open_pars.empty()) {
            auto& kids = net_.processes[parent->model].body[parent->open_pars.back()].children;
            const std::size_t i = e.process.index();
            if (kids.size() <= i) kids.resize(i + 1, SIZE_MAX);
            kids[i] = m;
        }
        break;
    }
    case csp::event::kind::process_end:
        if (live* l = find_live(self)) net_.processes[l->model].name = e.process.name();
        live_.erase(self);
        break;
    case csp::event::kind::par_begin:
        if (live* l = find_live(self)) {
            net_.processes[l->model].body.push_back({step::kind::par, 0, direction::send, {}});
            l->open_pars.push_back(net_.processes[l->model].body.size() - 1);
        }
        break;
    case csp::event::kind::par_end:
        if (live* l = find_live(self); l && !l->open_pars.empty()) {
            auto& kids = net_.processes[l->model].body[l->open_pars.back()].children;
            std::erase(kids, SIZE_MAX);
            l->open_pars.pop_back();
        }
        break;
    case csp::event::kind::channel_read:
    case csp::event::kind::channel_write: {
        live* l = find_live(self);
        if (!l || l->quiet > 0 || !e.channel) break;
        add_step(self, {step::kind::communicate, model_channel(e.channel),
                        e.what == csp::event::kind::channel_write ? direction::send : direction::receive, {}});
        break;
    }
    case csp::event::kind::alt_chose: {
        live* l = find_live(self);
        if (!l || l->quiet > 0) break;
        // The chosen guard's channel event came just before: when every
        // guard that took part is a channel end, that step becomes a choice.
        process& proc = net_.processes[l->model];
        std::vector<offer> offered;
        std::size_t taken = SIZE_MAX;
        bool channels_only = true;
        for (std::size_t i = 0; i < e.offers.size(); ++i) {
            const csp::offer& o = e.offers[i];
            if (!o.enabled) continue;
            if (!o.channel) {
                channels_only = false;
                break;
            }
            if (i == e.detail) taken = offered.size();
            offered.push_back({model_channel(o.channel), o.write ? direction::send : direction::receive});
        }
        const bool last_is_taken = taken != SIZE_MAX && !proc.body.empty() &&
                                   proc.body.back().what == step::kind::communicate &&
                                   proc.body.back().channel == offered[taken].channel &&
                                   proc.body.back().dir == offered[taken].dir;
        if (channels_only && last_is_taken) {
            proc.body.pop_back();
            if (offered.size() == 1)
                proc.body.push_back({step::kind::communicate, offered[0].channel, offered[0].dir, {}});
            else net_.choice(l->model, std::move(offered), taken);
        } else {
            proc.alternation_recorded_as_taken = true;
        }
        break;
    }
    case csp::event::kind::seq_begin:
    case csp::event::kind::seq_end:
        break;  // a seq runs in its process: its steps are already in order
    case csp::event::kind::message_sent:
    case csp::event::kind::message_received:
        break;  // between nodes: a node's model holds its own network only
    case csp::event::kind::barrier_sync: {
        live* l = find_live(self);
        if (!l || l->quiet > 0 || !e.barrier) break;
        auto& body = net_.processes[l->model].body;
        barrier_names_.try_emplace(e.barrier->id(), e.barrier->name());
        syncs_.push_back({l->model, body.size(), e.barrier->id(), e.detail});
        body.push_back({step::kind::sync, 0, direction::send, {}, 0});  // its barrier: resolve_barriers()
        break;
    }
    }
}

std::size_t recorder::model_channel(const csp::channel_view& ch) {
    auto it = channels_.find(ch.id());
    if (it == channels_.end()) {
        const auto& b = ch.buffering();
        const bool unbounded = b.how == csp::buffer::kind::unbounded;
        const std::size_t cap = b.how == csp::buffer::kind::none ? 0 : (unbounded ? 1 : b.capacity);
        // Numbered in order of first use, so a recording does not depend
        // on how many channels the program made before.
        const std::size_t m = net_.add_channel(identifier("c", channels_.size(), ch.name()), cap);
        if (b.how == csp::buffer::kind::overwriting)
            net_.notes.push_back(net_.channels[m].name + " overwrites when full; the model blocks instead");
        it = channels_.emplace(ch.id(), channel_use{m, unbounded}).first;
    }
    return it->second.model;
}

void recorder::message(direction d, int from, int to, const message_id& id) {
    const void* self = csp::process_view::of_caller().key();
    std::lock_guard lk(lock_);
    if (taken_) return;
    auto key = std::make_tuple(from, to, id.stream, id.step);
    auto it = messages_.find(key);
    if (it == messages_.end()) {
        std::ostringstream label;
        label << 'r' << from << "_r" << to << "_t" << id.stream << '_' << unsigned{id.step};
        it = messages_.emplace(key, net_.add_channel(identifier("m", messages_.size(), label.str()), 1)).first;
    }
    if (live* l = find_live(self))
        net_.processes[l->model].body.push_back({step::kind::communicate, it->second, d, {}});
}

void recorder::note(const std::string& text) {
    std::lock_guard lk(lock_);
    if (std::find(net_.notes.begin(), net_.notes.end(), text) == net_.notes.end()) net_.notes.push_back(text);
}

recorder::quiet_scope::quiet_scope(recorder* r) : r_(r), process_(r ? csp::process_view::of_caller().key() : nullptr) {
    if (!r_) return;
    std::lock_guard lk(r_->lock_);
    if (live* l = r_->find_live(process_)) ++l->quiet;
}

recorder::quiet_scope::~quiet_scope() {
    if (!r_) return;
    std::lock_guard lk(r_->lock_);
    if (live* l = r_->find_live(process_)) --l->quiet;
}

}  // namespace csp::model
