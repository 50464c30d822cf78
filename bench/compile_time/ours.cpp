// What a user's first distributed program compiles: a node, a port, a
// message, an allreduce (bench/compile_time_vs_mpi times it).
#include <cstdio>
#include <vector>

#include "collectives/collectives.hpp"
#include "collectives/net_communicator.hpp"
#include "csp/runtime.hpp"
#include "net/net.hpp"

int main() {
    namespace cc = csp::collectives;
    csp::run([] {
        csp::net::node n;
        cc::net_communicator comm(n);
        auto inbox = n.open(5);
        n.send((n.rank() + 1) % n.size(), 5, std::vector<double>{1.0, 2.0});
        const auto row = inbox.receive<std::vector<double>>();
        const double most = cc::allreduce(comm, row[0], cc::maximum{});
        std::printf("%g\n", most);
    });
}
