// A consumer of the installed library: a channel, the local collectives, a
// task graph and the network codec. Prints what it computed; exits 1 on a wrong answer.
#include <cstdio>
#include <vector>

#include "collectives/collectives.hpp"
#include "csp/csp.hpp"
#include "dataflow/dataflow.hpp"
#include "net/codec.hpp"

int main() {
    const auto sums = csp::run([] {
        return csp::collectives::run_local(4, [](csp::collectives::local_communicator& c) {
            return csp::collectives::allreduce(c, c.rank() + 1, csp::collectives::sum{});
        });
    });
    const int doubled = csp::run([] {
        csp::channel<int> ch{"numbers"};
        auto [ignored, got] = csp::par([w = ch.writer()] { w.write(21); },
                                       [r = ch.reader()] { return 2 * r.read(); });
        (void)ignored;
        return got;
    });
    // A chain of 4 tasks on 2 ranks, each adding its id to what it got.
    namespace df = csp::dataflow;
    const df::task_graph<int> chain{
        .tasks = 4,
        .owner = [](df::task_id t) { return static_cast<int>(t / 2); },
        .edges = [](df::task_id t) {
            df::task_edges e;
            if (t > 0) e.inputs = {{t - 1, 0}};
            if (t < 3) e.outputs = {{t + 1, 0}};
            return e;
        },
        .body = [](df::task<int>& t) {
            const int v = (t.inputs() ? t.input(0) : 0) + static_cast<int>(t.id());
            if (t.id() < 3) t.emit(0, v);
            else std::printf("graph %d, ", v);
        },
    };
    csp::run([&] {
        csp::collectives::run_local(2, [&](csp::collectives::local_communicator& c) { df::run(c, chain, 1); });
    });
    const auto back = csp::net::decode<std::vector<int>>(csp::net::encode(std::vector<int>{1, 2, 3}));
    std::printf("allreduce %d %d %d %d, channel %d, codec %zu\n", sums[0], sums[1], sums[2], sums[3], doubled,
                back.size());
    const bool right = sums == std::vector<int>{10, 10, 10, 10} && doubled == 42 && back == std::vector<int>{1, 2, 3};
    return right ? 0 : 1;
}
