// One node of the dataflow network tests (net_test.cpp), started as an OS
// process of its own: runs the shared stencil graph (stencil.hpp) as its
// rank of the job the CSP_* variables name, then prints what happened.
//
//   dataflow_net_peer <tasks> <steps>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "collectives/collectives.hpp"
#include "collectives/net_communicator.hpp"
#include "csp/runtime.hpp"
#include "dataflow/dataflow.hpp"
#include "net/net.hpp"
#include "test/dataflow/stencil.hpp"

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: dataflow_net_peer <tasks> <steps>\n");
        return 2;
    }
    const long tasks = std::atol(argv[1]);
    const int steps = std::atoi(argv[2]);
    csp::run([&] {
        csp::net::node self;
        {
            csp::collectives::net_communicator comm(self);
            try {
                const auto st = csp::dataflow::run(comm, dataflow_test::stencil(tasks, comm.size()), steps);
                std::printf("peer %d ran %llu instances\n", comm.rank(), static_cast<unsigned long long>(st.instances));
            } catch (const std::exception& e) {
                std::printf("peer %d stopped: %s\n", comm.rank(), e.what());
            }
        }
        self.close();
    });
    return 0;
}
