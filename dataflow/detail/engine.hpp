#pragma once
// One rank's part of a running graph.
//
// Processes: `workers` worker processes pop ready instances and run their
// bodies; one arrival process (at high runtime priority, so that what came in
// is placed before the next task is chosen) takes the graph's messages off
// the communicator.
//
// Shares. The rank's tasks are cut into one contiguous run per worker (a
// share), each with its own lock (a spinlock: a section is a few dozen
// instructions and never suspends; contended, a futex-based mutex put both
// threads in the kernel), ready queue and shelf of instance bookkeeping; a
// task's state is under its share's lock. Worker w pops from share w and,
// when that is empty, from the others in turn. Tasks that feed
// each other are usually neighbours in the numbering (a stencil's blocks),
// so a value mostly goes to a task of the producer's own share, under a
// lock and on cache lines the other workers rarely touch: with one lock for
// the rank, two workers spent most of an instance's time passing it and
// its data between their cores. Priority orders each share's queue; a
// worker takes another share's work only when its own has none.
//
// An instance (task, step) is ready when every input it names has arrived
// and step-1 of its task has finished; `queued` marks a task with an instance
// in the ready queue or running, so a task never has two at once (steps run
// in order). Values on a local edge are handed to the consumer's instance by
// the producer's worker; values to another rank travel in an envelope on the
// run's tag, which the consumer's arrival process hands over the same way.
// With one worker, a value for a local task is held until the body returns
// and handed over in the section that ends the instance, under the lock that
// section takes anyway: no other worker could run the consumer earlier, and
// a stencil's instance takes the lock twice (pop, end) instead of once more
// per output. With several, a local value is handed over at once, so that
// an idle worker (or one that becomes idle while the body runs) can start
// its consumer. Values for other ranks always leave at once, so
// communication overlaps the rest of the body.
//
// Ending. The rank is done when its last instance finished (each share
// counts its own; the last share to finish counts down shares_left_): the
// worker that finished it wakes the others and sends the arrival process a
// stop. No value for this rank can be on its way then, since every instance
// consumed every input it names. A rank may finish and leave (close its
// node) while others still run: the arrival process counts the values still
// to come from each rank (awaited_) and waits on the ranks that owe some, so
// that only the departure of a rank whose values it still needs fails it.
// Failure (a body threw, a lost peer, an abort from another rank) sets
// failed_, wakes everyone and stops the arrival process (finishing and
// failing race for end_: the first one wins); a failure seen first on this
// rank is sent on to every other rank as an abort. Ranks that already
// finished keep their result: they needed nothing more.
//
// Agreement. Before any body runs every rank checks its part of the graph
// (build) and the ranks compare what they found (agree): each sends rank 0
// its task count, step count, a fingerprint of owner() over every task, and
// why it refused the graph, if it did; rank 0 sends every rank the verdict.
// A graph refused anywhere, or ranks that disagree, fail every rank's run()
// before anything ran: a rank alone cannot see that another owns the same
// task (which would then run twice) or waits for a step that never comes.
//
// Wake protocol: a worker that finds every share's queue empty counts itself
// in idle_, looks at every queue once more, each under its share's lock, and
// reads one token from wake_; whoever makes an instance ready reads idle_
// under the same lock, takes one idle worker off the count and writes it a
// token after unlocking (an unbounded channel: the write never blocks). The
// lock orders the two: either the queuer's section came first and the idler
// sees the instance, or the idler's did and the queuer sees the idler. An
// idler that saw work takes itself off the count, or, if a queuer took it
// off first, reads the token that queuer is writing. Neither side needs a
// fence, so queueing an instance costs no atomic read-modify-write while no
// worker idles.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <cereal/cereal.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

#include "collectives/communicator.hpp"
#include "csp/address_fields.hpp"
#include "csp/channel.hpp"
#include "csp/priority.hpp"
#include "csp/process.hpp"
#include "csp/process_group.hpp"
#include "csp/spinlock.hpp"
#include "csp/timer.hpp"
#include "dataflow/graph_trace.hpp"
#include "dataflow/ready_queue.hpp"
#include "dataflow/task_graph.hpp"

namespace csp::dataflow {

struct run_stats {
    std::uint64_t instances = 0;     // task instances this rank ran
    std::uint64_t sent = 0;          // values sent to other ranks
    std::uint64_t received = 0;      // values received from other ranks
    std::uint64_t handed = 0;        // values handed over on this rank
    std::int64_t busy_ns = 0;        // summed over workers: time in bodies (run_options::time_bodies)
    std::int64_t elapsed_ns = 0;     // the whole run at this rank

    // Folds another rank's (or share's) counts in: counts and busy time
    // add, elapsed time is the longer of the two (ranks run side by side).
    run_stats& operator+=(const run_stats& o) {
        instances += o.instances;
        sent += o.sent;
        received += o.received;
        handed += o.handed;
        busy_ns += o.busy_ns;
        elapsed_ns = std::max(elapsed_ns, o.elapsed_ns);
        return *this;
    }
};

namespace detail {

inline std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Bytes of a trivially copyable value, or of a vector of them, are written as
// they are, unless they carry an address (csp/address_fields.hpp: refused);
// anything else goes through cereal.
template <class A, class V>
void serialize_value(A& a, V& v) {
    if constexpr (std::is_trivially_copyable_v<V>) {
        check_bytes_travel<V>();
        a(cereal::binary_data(&v, sizeof(V)));
    } else if constexpr (requires { typename V::value_type; v.data(); v.resize(0); } &&
                         std::is_trivially_copyable_v<typename V::value_type>) {
        check_bytes_travel<typename V::value_type>();
        cereal::size_type n = v.size();
        a(cereal::make_size_tag(n));
        v.resize(static_cast<std::size_t>(n));
        if (n) a(cereal::binary_data(v.data(), static_cast<std::size_t>(n) * sizeof(typename V::value_type)));
    } else {
        a(v);
    }
}

template <class V>
struct envelope {
    enum kind_t : std::int32_t { data = 0, abort = 1, stop = 2 };
    std::int32_t kind = data;
    std::int32_t slot = 0;  // the consumer's input index
    std::int32_t step = 0;  // the consumer's step
    task_id from = 0;
    task_id to = 0;
    std::string error;  // abort: what failed, where
    V value{};

    template <class A>
    void serialize(A& a) {
        a(kind, slot, step, from, to, error);
        serialize_value(a, value);
    }
};

// What one rank found before running a graph (see Agreement above).
struct graph_summary {
    task_id tasks = 0;
    std::int32_t steps = 0;
    std::uint64_t owners = 0;  // FNV-1a over owner(0), owner(1), ...
    std::string refused;       // why this rank refused the graph; empty if it did not

    bool same_graph(const graph_summary& o) const { return tasks == o.tasks && steps == o.steps && owners == o.owners; }
    template <class A>
    void serialize(A& a) {
        a(tasks, steps, owners, refused);
    }
};

// "rank 2" or "ranks 0, 1, 3".
inline std::string rank_list(const std::vector<int>& ranks) {
    std::string s = ranks.size() == 1 ? "rank " : "ranks ";
    for (std::size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
    return s;
}

// Rank 0's verdict on every rank's summary: empty if the graph may run.
inline std::string verdict(const std::vector<graph_summary>& all) {
    std::vector<int> refusing;
    for (std::size_t r = 0; r < all.size(); ++r)
        if (!all[r].refused.empty()) refusing.push_back(static_cast<int>(r));
    if (!refusing.empty()) {
        const int r = refusing.front();
        std::string v =
            "task graph refused at rank " + std::to_string(r) + ": " + all[static_cast<std::size_t>(r)].refused;
        if (refusing.size() > 1) v += " (refused at " + rank_list(refusing) + ")";
        return v;
    }
    // The distinct summaries, each with the ranks that hold it.
    std::vector<std::pair<const graph_summary*, std::vector<int>>> kinds;
    for (std::size_t r = 0; r < all.size(); ++r) {
        auto it = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first->same_graph(all[r]); });
        if (it == kinds.end()) kinds.push_back({&all[r], {static_cast<int>(r)}});
        else it->second.push_back(static_cast<int>(r));
    }
    if (kinds.size() == 1) return {};
    std::string v = "task graph: the ranks do not run the same graph:";
    for (std::size_t k = 0; k < kinds.size(); ++k) {
        const auto& [g, ranks] = kinds[k];
        v += (k ? "; " : " ") + rank_list(ranks) + ": " + std::to_string(g->tasks) + " tasks, " +
             std::to_string(g->steps) + " steps";
        if (kinds.front().first->tasks == g->tasks && kinds.front().first->owners != g->owners)
            v += ", a different owner() than " + rank_list(kinds.front().second);
    }
    return v + " (every rank must run() one graph, with the same tasks and owner(), for the same number of steps)";
}

template <collectives::communicator C, class V>
class engine {
public:
    struct options {
        int workers = 1;
        bool trace = false;
        bool time_bodies = false;  // implied by trace
        std::function<std::unique_ptr<ready_queue>()> queue;
        bool agree = true;
    };

    engine(C& comm, const task_graph<V>& g, int steps, options o)
        : comm_(comm), g_(g), steps_(steps), opt_(std::move(o)), tag_(comm.next_tag(collectives::stream{})) {
        opt_.time_bodies = opt_.time_bodies || opt_.trace;  // a trace's spans need the times
        graph_summary mine{g.tasks, steps, 0, {}};
        std::exception_ptr refused;
        try {
            build(mine.owners);
        } catch (const std::exception& e) {
            refused = std::current_exception();
            mine.refused = e.what();
        } catch (...) {
            refused = std::current_exception();
            mine.refused = "an exception that is not a std::exception";
        }
        if (!opt_.agree) {
            if (refused) std::rethrow_exception(refused);
            return;
        }
        try {
            agree(std::move(mine), refused);
        } catch (...) {
            // An agreement that failed (a rank lost or gone before it sent
            // its summary) may leave other ranks' summaries here, or on
            // their way: they belong to a call this rank made.
            forget_call();
            throw;
        }
    }

    run_stats run() {
        const auto t0 = now_ns();
        for (std::size_t i = 0; i < local_.size(); ++i) {
            std::lock_guard lk(local_[i].share->lock);
            advance_locked(i);
        }
        if (!local_.empty() && steps_ > 0) {
            csp::process_group g;
            g.spawn(csp::proc("dataflow arrivals", [this] { arrivals(); }));
            for (int w = 0; w < opt_.workers; ++w)
                g.spawn(csp::proc("dataflow worker " + std::to_string(w), [this, w] { work(w); }));
            g.wait();
        }
        gather_shares();
        stats_.elapsed_ns = now_ns() - t0;
        // Nothing of this run takes a message of its call any more. After a
        // failure, values and notices other ranks sent before they heard of
        // it may still be here or on their way; after success, a rank that
        // failed later may still send its abort here. Neither must read as
        // a message of a call this rank did not make.
        forget_call();
        if (failed_) std::rethrow_exception(failed_);
        return stats_;
    }

    graph_trace take_trace() { return std::move(trace_); }

private:
    // Nothing of this run takes a message of its call any more.
    void forget_call() {
        if constexpr (requires { comm_.forget(tag_); }) comm_.forget(tag_);
    }

    // Where output i of a local task goes.
    struct route {
        int rank = 0;
        task_id to = 0;
        int slot = 0;
        int lag = 0;
        std::int64_t local = -1;  // the consumer's index in local_, if it is here
    };
    struct instance {
        std::vector<V> inputs;
        std::vector<char> filled;
        std::vector<char> emitted;  // the body's outputs so far (task<V>)
        int missing = 0;
    };
    using pending_map = std::map<int, instance>;  // by step
    // See Shares above. Aligned so that two shares' locks and counts never
    // share a cache line.
    struct alignas(64) work_share {
        csp::spinlock lock;  // the share's tasks (local_task::share) and everything below
        std::unique_ptr<ready_queue> queue;
        // The queue's size, written under the lock; a hint without it, for
        // workers looking for work to pass over empty shares.
        std::atomic<std::size_t> queued{0};
        // Map nodes of finished instances, their vectors' capacity kept, for
        // the next instances: a step of a task then allocates nothing of its own.
        std::vector<typename pending_map::node_type> shelf;
        std::uint64_t order = 0;  // instances queued so far
        std::uint64_t left = 0;   // instances of its tasks not yet finished
        run_stats stats;
        graph_trace trace;
    };
    struct local_task {
        task_id id = 0;
        task_edges edges;
        std::vector<route> routes;
        int next_step = 0;       // the step to run next
        bool queued = false;     // an instance is in the ready queue or running
        pending_map pending;
        work_share* share = nullptr;  // its lock guards the fields above
    };

    // Checks both sides of every edge of this rank's tasks, and that no
    // lag-0 edges from them close a cycle, and lays out the routes; `owners`
    // becomes the fingerprint of owner() (graph_summary). Errors name the
    // task and the edge.
    void build(std::uint64_t& owners) {
        if (!g_.owner || !g_.edges || !g_.body)
            throw usage_error("dataflow::run: a task graph needs owner, edges and body");
        if (steps_ < 0) throw usage_error("dataflow::run: " + std::to_string(steps_) + " steps");
        if (opt_.workers < 1)
            throw usage_error("dataflow::run: run_options::workers is " + std::to_string(opt_.workers) +
                              " (a count of worker processes, or 0 for one per thread of the runtime)");
        const int me = comm_.rank();
        owners = 0xcbf29ce484222325ull;
        for (task_id id = 0; id < g_.tasks; ++id) {
            const int r = owner_of(id);
            owners = (owners ^ static_cast<std::uint64_t>(r)) * 0x100000001b3ull;
            if (r != me) continue;
            local_.push_back(local_task{id, g_.edges(id), {}, 0, false, {}, nullptr});
        }
        ids_in_a_run_ =
            local_.empty() || local_.back().id - local_.front().id + 1 == static_cast<task_id>(local_.size());
        if (!ids_in_a_run_)
            for (std::size_t i = 0; i < local_.size(); ++i) index_[local_[i].id] = i;
        std::unordered_map<task_id, task_edges> others;  // edges of remote neighbours, asked once
        auto edges_of = [&](task_id id) -> const task_edges& {
            if (const std::size_t i = local_of(id); i != npos) return local_[i].edges;
            auto [it, fresh] = others.try_emplace(id);
            if (fresh) it->second = g_.edges(id);
            return it->second;
        };
        for (auto& t : local_) {
            for (const auto& in : t.edges.inputs) {
                check_edge_end(t.id, in.from, in.lag, "input");
                const auto& outs = edges_of(in.from).outputs;
                if (std::count(outs.begin(), outs.end(), output{t.id, in.lag}) != 1)
                    throw usage_error("task graph: " + name(t.id) + " has an input from " + name(in.from) +
                                      " (lag " + std::to_string(in.lag) + ") that " + name(in.from) +
                                      " lists " + std::to_string(std::count(outs.begin(), outs.end(),
                                                                            output{t.id, in.lag})) +
                                      " times among its outputs");
            }
            for (const auto& out : t.edges.outputs) {
                check_edge_end(t.id, out.to, out.lag, "output");
                const auto& ins = edges_of(out.to).inputs;
                const auto it = std::find(ins.begin(), ins.end(), input{t.id, out.lag});
                if (it == ins.end() || std::count(ins.begin(), ins.end(), input{t.id, out.lag}) != 1)
                    throw usage_error("task graph: " + name(t.id) + " has an output to " + name(out.to) + " (lag " +
                                      std::to_string(out.lag) + ") that " + name(out.to) +
                                      " does not list exactly once among its inputs");
                route r{owner_of(out.to), out.to, static_cast<int>(it - ins.begin()), out.lag, -1};
                if (const std::size_t li = local_of(out.to); li != npos) r.local = static_cast<std::int64_t>(li);
                t.routes.push_back(r);
            }
        }
        check_acyclic(edges_of);
        for (const auto& t : local_)
            for (const auto& in : t.edges.inputs)
                if (const int from = owner_of(in.from); from != me && steps_ > in.lag)
                    awaited_[from] += static_cast<std::uint64_t>(steps_ - in.lag);
        make_shares();
        for (const auto& t : local_) {
            for (const auto& r : t.routes) talks_ = talks_ || r.local < 0;
            for (const auto& in : t.edges.inputs) talks_ = talks_ || local_of(in.from) == npos;
        }
    }

    // Inside a step the graph must be acyclic: an instance on a cycle of
    // lag-0 edges waits for itself. Walks back along lag-0 inputs from this
    // rank's tasks, depth first (tasks of other ranks are asked once, by
    // edges_of), so a cycle through any rank is found by every rank it
    // passes through.
    template <class EdgesOf>
    void check_acyclic(EdgesOf& edges_of) const {
        enum : char { on_path = 1, done = 2 };
        std::unordered_map<task_id, char> state;
        std::vector<std::pair<task_id, std::size_t>> path;  // (task, next input to follow)
        for (const auto& start : local_) {
            if (state.count(start.id)) continue;
            state[start.id] = on_path;
            path.push_back({start.id, 0});
            while (!path.empty()) {
                const task_id id = path.back().first;
                const auto& ins = edges_of(id).inputs;
                std::size_t& next = path.back().second;
                while (next < ins.size() && (ins[next].lag != 0 || ins[next].from < 0 || ins[next].from >= g_.tasks))
                    ++next;
                if (next == ins.size()) {
                    state[id] = done;
                    path.pop_back();
                    continue;
                }
                const task_id from = ins[next++].from;
                const auto seen = state.find(from);
                if (seen == state.end()) {
                    state[from] = on_path;
                    path.push_back({from, 0});
                } else if (seen->second == on_path) {
                    auto at = std::find_if(path.begin(), path.end(), [&](const auto& p) { return p.first == from; });
                    std::string cycle;
                    for (auto p = at; p != path.end(); ++p)
                        cycle += (p == at ? name(p->first) + " takes an input from " : ", which takes one from ") +
                                 name(std::next(p) == path.end() ? from : std::next(p)->first);
                    throw usage_error(
                        "task graph: lag-0 edges form a cycle, so none of its tasks can start a step: " + cycle +
                        " (inside a step the graph must be acyclic: give one of these edges a lag)");
                }
            }
        }
    }

    // Sends this rank's summary to rank 0 and takes its verdict (see
    // Agreement above); throws if the graph may not run: this rank's own
    // error where it refused the graph, a usage_error naming the rank that
    // did, or the ranks' disagreement.
    void agree(graph_summary mine, std::exception_ptr refused) {
        std::string v;
        if (comm_.size() == 1) {
            v = verdict({mine});
        } else if (comm_.rank() != 0) {
            comm_.send(0, tag_.step(1), mine);
            v = comm_.template receive<std::string>(0, tag_.step(2));
        } else {
            std::vector<graph_summary> all{std::move(mine)};
            for (int r = 1; r < comm_.size(); ++r)
                all.push_back(comm_.template receive<graph_summary>(r, tag_.step(1)));
            v = verdict(all);
            for (int r = 1; r < comm_.size(); ++r) comm_.send(r, tag_.step(2), v);
        }
        if (refused) std::rethrow_exception(refused);
        if (!v.empty()) throw usage_error(v);
    }

    void check_edge_end(task_id self, task_id other, int lag, const char* what) const {
        if (other < 0 || other >= g_.tasks)
            throw usage_error("task graph: " + name(self) + " names task " + std::to_string(other) + " as an " +
                              what + ": the graph has tasks 0.." + std::to_string(g_.tasks - 1));
        if (lag < 0 || lag > max_lag)
            throw usage_error("task graph: " + name(self) + " has an " + what + " of lag " + std::to_string(lag) +
                              " (0: the same step, k: k steps later, at most " + std::to_string(max_lag) + ")");
        if (lag == 0 && other == self)
            throw usage_error("task graph: " + name(self) + " has a lag-0 edge to itself");
    }

    int owner_of(task_id id) const {
        const int r = g_.owner(id);
        if (r < 0 || r >= comm_.size())
            throw usage_error("task graph: owner(" + std::to_string(id) + ") is rank " + std::to_string(r) +
                              " of a group of " + std::to_string(comm_.size()));
        return r;
    }

    std::string name(task_id id) const { return g_.name ? g_.name(id) : "task " + std::to_string(id); }

    // Task id -> its index in local_, or npos if another rank owns it. A
    // block distribution gives a rank one run of ids: then an offset.
    static constexpr std::size_t npos = static_cast<std::size_t>(-1);
    std::size_t local_of(task_id id) const {
        if (ids_in_a_run_) {
            if (local_.empty() || id < local_.front().id || id > local_.back().id) return npos;
            return static_cast<std::size_t>(id - local_.front().id);
        }
        const auto it = index_.find(id);
        return it == index_.end() ? npos : it->second;
    }

    instance& instance_locked(local_task& t, int step) {
        auto it = t.pending.find(step);
        if (it == t.pending.end()) {
            auto& shelf = t.share->shelf;
            if (shelf.empty()) {
                it = t.pending.try_emplace(step).first;
            } else {
                auto node = std::move(shelf.back());
                shelf.pop_back();
                node.key() = step;
                it = t.pending.insert(std::move(node)).position;
            }
            instance& in = it->second;
            in.inputs.resize(t.edges.inputs.size());
            in.filled.assign(t.edges.inputs.size(), 0);
            in.missing = 0;
            // An input whose producer step would come before step 0 holds
            // the initial value instead.
            for (std::size_t i = 0; i < t.edges.inputs.size(); ++i) {
                const auto& e = t.edges.inputs[i];
                if (e.lag <= step) {
                    ++in.missing;
                    continue;
                }
                if (g_.initial) in.inputs[i] = g_.initial(t.id, i, step);
                in.filled[i] = 1;
            }
        }
        return it->second;
    }

    // Cuts local_ into one contiguous run of tasks per worker (Shares),
    // each with its own queue (run_options::queue makes one per share).
    void make_shares() {
        const std::size_t n = std::max<std::size_t>(
            1, std::min(static_cast<std::size_t>(std::max(opt_.workers, 1)), local_.size()));
        for (std::size_t k = 0; k < n; ++k) {
            shares_.push_back(std::make_unique<work_share>());
            shares_.back()->queue = opt_.queue ? opt_.queue() : std::make_unique<by_priority>();
            if (!shares_.back()->queue) throw usage_error("dataflow::run: run_options::queue made no queue");
        }
        for (std::size_t i = 0; i < local_.size(); ++i) {
            local_[i].share = shares_[i * n / local_.size()].get();
            local_[i].share->left += static_cast<std::uint64_t>(steps_);
        }
        shares_left_.store(n, std::memory_order_relaxed);
    }

    // Sums the shares' counts into stats_ and their traces into trace_, in
    // time order.
    void gather_shares() {
        for (const auto& s : shares_) {
            stats_ += s->stats;
            trace_.tasks.insert(trace_.tasks.end(), s->trace.tasks.begin(), s->trace.tasks.end());
            trace_.transfers.insert(trace_.transfers.end(), s->trace.transfers.begin(), s->trace.transfers.end());
        }
        if (shares_.size() > 1) {
            std::stable_sort(trace_.tasks.begin(), trace_.tasks.end(),
                             [](const task_span& a, const task_span& b) { return a.start_ns < b.start_ns; });
            std::stable_sort(trace_.transfers.begin(), trace_.transfers.end(),
                             [](const transfer_event& a, const transfer_event& b) { return a.ns < b.ns; });
        }
    }

    bool stopped() const { return end_.load(std::memory_order_acquire) != ending::running; }
    bool failed() const { return end_.load(std::memory_order_acquire) == ending::failed; }

    // Queues local task i's next step if its inputs are all here; the
    // caller holds its share's lock. Returns whether a worker should be woken.
    bool advance_locked(std::size_t i) {
        local_task& t = local_[i];
        if (t.queued || t.next_step >= steps_ || stopped()) return false;
        if (instance_locked(t, t.next_step).missing != 0) return false;
        t.queued = true;
        work_share& s = *t.share;
        const std::int64_t p = g_.priority ? g_.priority(t.id, t.next_step) : 0;
        s.queue->push(ready_task{t.id, t.next_step, p, s.order++});
        s.queued.store(s.queued.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return take_idle();
    }

    // Takes one worker off the idle count, if any is on it (Wake protocol).
    bool take_idle() {
        std::size_t n = idle_.load(std::memory_order_relaxed);
        while (n > 0 && !idle_.compare_exchange_weak(n, n - 1, std::memory_order_relaxed)) {
        }
        return n > 0;
    }

    // Places a value for input `slot` of local task i at `step`, counting it
    // in `count` (and recording `arrival`, if any) under the same lock.
    void deliver(std::size_t i, int slot, int step, V&& value, std::uint64_t run_stats::*count,
                 const transfer_event* arrival = nullptr) {
        bool wake = false;
        {
            work_share& s = *local_[i].share;
            std::lock_guard lk(s.lock);
            if (failed()) return;
            if (arrival) s.trace.transfers.push_back(*arrival);
            wake = deliver_locked(i, slot, step, std::move(value), count);
        }
        if (wake) wake_.writer().write(0);
    }

    // deliver() under the consumer's share's lock, held by the caller.
    // Returns whether a worker should be woken.
    bool deliver_locked(std::size_t i, int slot, int step, V&& value, std::uint64_t run_stats::*count) {
        local_task& t = local_[i];
        ++(t.share->stats.*count);
        if (step < t.next_step || slot < 0 || static_cast<std::size_t>(slot) >= t.edges.inputs.size())
            throw usage_error("task graph: a value for input " + std::to_string(slot) + " of " + name(t.id) +
                              " step " + std::to_string(step) + " that it does not wait for");
        instance& in = instance_locked(t, step);
        if (in.filled[slot])
            throw usage_error("task graph: input " + std::to_string(slot) + " of " + name(t.id) + " step " +
                              std::to_string(step) + " arrived twice");
        in.inputs[slot] = std::move(value);
        in.filled[slot] = 1;
        --in.missing;
        return in.missing == 0 && step == t.next_step && advance_locked(i);
    }

    // A value for a local task, held until the body returns (one worker:
    // see the hand-over above).
    struct held_value {
        std::size_t to;
        int slot;
        int step;
        V value;
    };

    // Where the values of one running instance go.
    struct emitter final : output_sink<V> {
        emitter(engine& e, std::size_t i, int step) : eng(e), index(i), step(step) {}
        void put(std::size_t output, V&& value) override { eng.emit(index, step, output, std::move(value)); }
        engine& eng;
        std::size_t index;
        int step;
    };

    // Output `output` of local task i at `step`.
    void emit(std::size_t i, int producer_step, std::size_t output, V&& value) {
        const local_task& t = local_[i];
        const route& r = t.routes[output];
        const int step = producer_step + r.lag;
        if (step >= steps_) return;  // a lagged output of a last step: no consumer instance
        if (r.local >= 0) {
            const auto to = static_cast<std::size_t>(r.local);
            if (opt_.workers == 1) held_.push_back(held_value{to, r.slot, step, std::move(value)});
            else deliver(to, r.slot, step, std::move(value), &run_stats::handed);
            return;
        }
        envelope<V> e;
        e.slot = r.slot;
        e.step = step;
        e.from = t.id;
        e.to = r.to;
        e.value = std::move(value);
        {
            work_share& s = *t.share;
            std::lock_guard lk(s.lock);
            ++s.stats.sent;
            if (opt_.trace)
                s.trace.transfers.push_back(
                    transfer_event{t.id, r.to, step, comm_.rank(), transfer_event::sent, 0, now_ns()});
        }
        comm_.send(r.rank, tag_, std::move(e));
    }

    // Pops a ready instance, from its own share first (Shares), and takes
    // its node out of its task's pending map in the same locked section.
    void work(int w) {
        const std::size_t n = shares_.size(), own = static_cast<std::size_t>(w) % n;
        for (;;) {
            ready_task next;
            std::size_t i = 0;
            typename pending_map::node_type node;
            bool got = false;
            for (std::size_t k = own, looked = 0; looked < n && !got; ++looked, k = k + 1 == n ? 0 : k + 1) {
                work_share& s = *shares_[k];
                if (k != own && s.queued.load(std::memory_order_relaxed) == 0) continue;
                std::lock_guard lk(s.lock);
                // No body starts once the run ended; the own share is never
                // skipped, so every pass makes this check at least once.
                if (stopped()) return;
                if (s.queue->empty()) continue;
                next = s.queue->pop();
                s.queued.store(s.queued.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
                i = local_of(next.id);
                node = local_[i].pending.extract(next.step);
                got = true;
            }
            if (got) run_one(w, next, i, std::move(node));
            else idle();
        }
    }

    // Waits for a token unless work came or the run ended meanwhile (Wake
    // protocol).
    void idle() {
        // acq_rel: an ending that zeroed the count before this is seen below.
        idle_.fetch_add(1, std::memory_order_acq_rel);
        bool work = stopped();
        for (std::size_t k = 0; k < shares_.size() && !work; ++k) {
            std::lock_guard lk(shares_[k]->lock);
            work = !shares_[k]->queue->empty();
        }
        if (work && take_idle()) return;
        (void)wake_.reader().read();
    }

    void run_one(int w, const ready_task& r, std::size_t i, typename pending_map::node_type node) {
        instance& in = node.mapped();
        in.emitted.assign(local_[i].edges.outputs.size(), 0);
        const auto start = opt_.time_bodies ? now_ns() : 0;
        emitter out(*this, i, r.step);
        try {
            task<V> t(r.id, r.step, steps_, in.inputs, local_[i].edges, out, in.emitted);
            g_.body(t);
            if (auto miss = t.missing(); !miss.empty())
                throw usage_error("task graph: " + name(r.id) + " step " + std::to_string(r.step) +
                                  " returned without emitting output " + std::to_string(miss.front()) + " (to " +
                                  name(local_[i].edges.outputs[miss.front()].to) + ")");
        } catch (...) {
            if (!held_.empty()) held_.clear();
            fail(std::current_exception(), name(r.id) + " step " + std::to_string(r.step), true);
            return;
        }
        const auto end = opt_.time_bodies ? now_ns() : 0;
        in.inputs.clear();  // what the body left of its inputs goes now, outside the lock
        std::size_t wakes = 0;
        bool done = false;
        std::exception_ptr refused;
        {
            local_task& t = local_[i];
            work_share& s = *t.share;
            std::lock_guard lk(s.lock);
            if (s.shelf.size() < max_shelved) s.shelf.push_back(std::move(node));
            ++s.stats.instances;
            s.stats.busy_ns += end - start;
            if (opt_.trace) s.trace.tasks.push_back(task_span{r.id, r.step, comm_.rank(), w, start, end});
            t.queued = false;
            ++t.next_step;
            if (!failed()) {
                try {
                    for (auto& h : held_)
                        wakes += deliver_locked(h.to, h.slot, h.step, std::move(h.value), &run_stats::handed);
                } catch (...) {
                    refused = std::current_exception();
                }
            }
            wakes += advance_locked(i);
            done = !refused && --s.left == 0 && shares_left_.fetch_sub(1, std::memory_order_acq_rel) == 1;
        }
        if (!held_.empty()) held_.clear();
        if (refused) {
            fail(refused, name(r.id) + " step " + std::to_string(r.step), true);
            return;
        }
        if (done) {
            finish();
            return;
        }
        for (; wakes > 0; --wakes) wake_.writer().write(0);
        // Between two bodies the node's other ready processes run: values
        // just sent leave, and values that came in meanwhile are taken in
        // (the arrival process is above the workers' priority) before the
        // next task is chosen. Over TCP that needs a look at the sockets
        // first; UCX links and local channels deliver without one, and the
        // look is a system call over every descriptor of the node.
        if (talks_ && receives_through_io()) csp::yield_to_io();
        else csp::yield();
    }

    // Whether a value from another rank may wait for the IO scheduler's
    // poll (collectives' communicators say; one that does not is assumed to).
    bool receives_through_io() const {
        if constexpr (requires { comm_.receives_through_io(); }) return comm_.receives_through_io();
        else return true;
    }

    // The ranks that still owe this rank values; itself when none does
    // (an empty set would mean every rank to receive_any_of).
    std::vector<int> owing() const {
        std::vector<int> out;
        for (const auto& [r, n] : awaited_) out.push_back(r);
        if (out.empty()) out.push_back(comm_.rank());
        return out;
    }

    void arrivals() {
        csp::this_process::set_priority(csp::priority_high);
        std::vector<int> among = owing();
        for (;;) {
            envelope<V> e;
            try {
                auto got = collectives::receive_any_of<envelope<V>>(comm_, tag_, among);
                e = std::move(got.value);
                if (e.kind == envelope<V>::stop) return;
                if (e.kind == envelope<V>::abort) {
                    fail(std::make_exception_ptr(graph_error(e.error)), {}, false);
                    return;
                }
                const std::size_t to = local_of(e.to);
                if (to == npos)
                    throw usage_error("task graph: rank " + std::to_string(comm_.rank()) + " got a value for " +
                                      name(e.to) + ", which it does not own");
                const transfer_event arrival{e.from, e.to, e.step, comm_.rank(), transfer_event::arrived, 0,
                                             opt_.trace ? now_ns() : 0};
                deliver(to, e.slot, e.step, std::move(e.value), &run_stats::received,
                        opt_.trace ? &arrival : nullptr);
                if (auto a = awaited_.find(got.source); a != awaited_.end() && --a->second == 0) {
                    awaited_.erase(a);
                    among = owing();
                }
            } catch (...) {
                fail(std::current_exception(), "rank " + std::to_string(comm_.rank()) + " receiving", true);
                return;
            }
        }
    }

    // Records the first failure; `where` and `tell` say whether it happened
    // here (and must be told to the other ranks) or came from one of them.
    void fail(std::exception_ptr e, const std::string& where, bool tell) {
        if (ending running = ending::running; !end_.compare_exchange_strong(running, ending::failed)) return;
        failed_ = e;
        wake_idlers();
        if (tell) {
            std::string what;
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                what = x.what();
            } catch (...) {
                what = "an exception that is not a std::exception";
            }
            envelope<V> a;
            a.kind = envelope<V>::abort;
            a.error = "task graph failed at rank " + std::to_string(comm_.rank()) + ", " + where + ": " + what;
            // Notices: a rank that finished and left is no loss.
            for (int r = 0; r < comm_.size(); ++r) {
                if (r == comm_.rank()) continue;
                try {
                    collectives::send_notice(comm_, r, tag_, a);
                } catch (...) {
                    // That rank is gone; it cannot be waiting for this graph.
                }
            }
        }
        envelope<V> s;
        s.kind = envelope<V>::stop;
        comm_.send(comm_.rank(), tag_, std::move(s));
    }

    // The rank's last instance finished, unless a failure came first (it
    // did this itself).
    void finish() {
        if (ending running = ending::running; !end_.compare_exchange_strong(running, ending::finished)) return;
        wake_idlers();
        envelope<V> s;
        s.kind = envelope<V>::stop;
        comm_.send(comm_.rank(), tag_, std::move(s));
    }

    void wake_idlers() {
        for (std::size_t k = idle_.exchange(0, std::memory_order_acq_rel); k > 0; --k) wake_.writer().write(0);
    }

    C& comm_;
    const task_graph<V>& g_;
    const int steps_;
    options opt_;
    const collectives::tag tag_;
    static constexpr int max_lag = 1 << 20;

    // Values still to come from each other rank that owes some; only the
    // arrival process touches it once the run started.
    std::map<int, std::uint64_t> awaited_;

    // Fixed once built: the tasks (their changing state under their share's
    // lock), the shares and the task-id index.
    std::vector<local_task> local_;
    std::vector<std::unique_ptr<work_share>> shares_;
    static constexpr std::size_t max_shelved = 256;  // per share
    std::unordered_map<task_id, std::size_t> index_;  // only when the ids are not one run
    bool ids_in_a_run_ = false;  // local_'s ids are first, first + 1, ... (local_of)
    bool talks_ = false;  // some edge of this rank's tasks crosses to another rank
    // The values the running body emitted for local tasks, with one worker
    // only; with several it stays empty, and no worker writes it (hence the
    // look before each clear).
    std::vector<held_value> held_;

    std::atomic<std::size_t> shares_left_{0};  // shares with instances not yet finished
    std::atomic<std::size_t> idle_{0};         // workers owed a token (Wake protocol)
    enum class ending { running, finished, failed };
    std::atomic<ending> end_{ending::running};
    std::exception_ptr failed_;  // written by the failure that won end_; read once every process ended
    run_stats stats_;            // the shares' counts, once the run ended
    graph_trace trace_;          // the shares' records, once the run ended
    csp::channel<int> wake_{csp::buffer::unbounded()};
};

}  // namespace detail
}  // namespace csp::dataflow
