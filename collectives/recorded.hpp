#pragma once
// Recording a collective as a model.
//
//   csp::model::network net = csp::collectives::record_local(8, [](auto& comm) {
//       csp::collectives::reduce_binomial_parallel(comm, 1, csp::collectives::sum{}, 0);
//   });
//   csp::model::write_promela(file, net);
//
// A collective's messages depend only on rank and size, so one run gives its
// exact process network: a process per rank (and per parallel receive),
// and per rank-to-rank message one buffered channel of the model (sends
// never block). The mailbox channels that carry the messages stay out of the
// model. A receive from any rank is recorded as the sender it got; the
// model's notes say so.
#include <utility>

#include "collectives/communicator.hpp"
#include "collectives/local_communicator.hpp"
#include "csp/model/recorder.hpp"
#include "csp/runtime.hpp"

namespace csp::collectives {

template <class C>
class recorded {
public:
    recorded(C& inner, model::recorder& rec) : inner_(&inner), rec_(&rec) {}

    int rank() const { return inner_->rank(); }
    int size() const { return inner_->size(); }
    tag next_tag(stream s = {}) { return inner_->next_tag(s); }

    template <class T>
    void send(int to, tag t, T value) {
        {
            model::recorder::quiet_scope hide(rec_);
            inner_->send(to, t, std::move(value));
        }
        rec_->message(model::direction::send, rank(), to, t.bits());
    }
    template <class T>
    T receive(int from, tag t) {
        T v = [&] {
            model::recorder::quiet_scope hide(rec_);
            return inner_->template receive<T>(from, t);
        }();
        rec_->message(model::direction::receive, from, rank(), t.bits());
        return v;
    }
    template <class T>
    received<T> receive_any(tag t) {
        auto m = [&] {
            model::recorder::quiet_scope hide(rec_);
            return inner_->template receive_any<T>(t);
        }();
        rec_->message(model::direction::receive, m.source, rank(), t.bits());
        rec_->note("a receive from any rank is recorded as the sender it got in the recorded run");
        return m;
    }

private:
    C* inner_;
    model::recorder* rec_;
};

// Runs body(comm) at every rank of an n-rank local group on one thread,
// recording, and returns the network.
template <class F>
model::network record_local(int n, F body) {
    model::recorder rec;
    csp::run([&] {
        run_local(n, [&](local_communicator& c) {
            recorded<local_communicator> rc(c, rec);
            body(rc);
        });
    });
    return rec.take();
}

}  // namespace csp::collectives
