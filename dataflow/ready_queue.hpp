#pragma once
// Which ready task runs next.
//
// A task instance is ready once every input it names has arrived and its
// previous step has finished. The engine pushes ready instances here and its
// workers pop them; the queue only orders them, so any policy computes the
// same results. A rank's tasks are cut into one share per worker
// (engine.hpp), each with a queue of its own that is called under its
// share's lock (a spinlock: a queue's calls must return without waiting or
// sleeping), so a queue needs no lock of its own. A worker pops from its own
// share's queue while it holds work, from the others' when it does not.
//
//   by_priority   the default: higher priority first, FIFO among equals (the
//                 order instances became ready)
//   newest_first  LIFO, ignoring priority: good for cache reuse, bad for
//                 pipelines (Thyme's MMULT starved its neighbours this way)
//
// A user policy derives from ready_queue and is given to run() as a factory
// (run_options::queue), called once per share.
#include <cstdint>
#include <deque>
#include <queue>
#include <vector>

#include "dataflow/task_graph.hpp"

namespace csp::dataflow {

struct ready_task {
    task_id id = 0;
    int step = 0;
    std::int64_t priority = 0;
    std::uint64_t order = 0;  // when it became ready in its share (its queue): 0, 1, 2, ...
};

class ready_queue {
public:
    virtual ~ready_queue() = default;
    virtual void push(const ready_task& t) = 0;
    // Only called when not empty.
    virtual ready_task pop() = 0;
    virtual bool empty() const = 0;
};

// While every queued instance has the same priority (always, in a graph
// without priority metadata) the order is plain FIFO, kept in a deque; the
// first push of another priority moves them all into a heap, which serves
// until it empties. Both give the same order: by priority, then by `order`.
class by_priority final : public ready_queue {
public:
    void push(const ready_task& t) override {
        if (heap_.empty() && (fifo_.empty() || fifo_.front().priority == t.priority)) {
            fifo_.push_back(t);
            return;
        }
        for (const auto& f : fifo_) heap_.push(f);
        fifo_.clear();
        heap_.push(t);
    }
    ready_task pop() override {
        if (heap_.empty()) {
            ready_task t = fifo_.front();
            fifo_.pop_front();
            return t;
        }
        ready_task t = heap_.top();
        heap_.pop();
        return t;
    }
    bool empty() const override { return heap_.empty() && fifo_.empty(); }

private:
    struct below {
        bool operator()(const ready_task& a, const ready_task& b) const {
            return a.priority != b.priority ? a.priority < b.priority : a.order > b.order;
        }
    };
    std::deque<ready_task> fifo_;  // empty whenever heap_ is not
    std::priority_queue<ready_task, std::vector<ready_task>, below> heap_;
};

class newest_first final : public ready_queue {
public:
    void push(const ready_task& t) override { s_.push_back(t); }
    ready_task pop() override {
        ready_task t = s_.back();
        s_.pop_back();
        return t;
    }
    bool empty() const override { return s_.empty(); }

private:
    std::vector<ready_task> s_;
};

}  // namespace csp::dataflow
