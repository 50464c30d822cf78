// One rank of the network grid: run by csp-launch as one OS process per
// rank. Prints what went wrong and exits 1, or prints "grid ok" and exits 0.
// With the argument "allreduce-forever" it runs allreduces until it is
// killed (the departure tests kill it).
#include <iostream>
#include <string>

#include "collectives/net_communicator.hpp"
#include "csp/runtime.hpp"
#include "grid.hpp"

int main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "allreduce-forever") {
        csp::run([] {
            csp::net::node self;
            csp::collectives::net_communicator comm(self);
            for (;;) csp::collectives::allreduce(comm, 1, csp::collectives::sum{});
        });
        return 0;
    }
    std::vector<std::string> wrong;
    csp::run([&] {
        csp::net::node self;
        {
            csp::collectives::net_communicator comm(self);
            wrong = grid::check_all(comm);
            csp::collectives::barrier(comm);  // nobody leaves while others still receive
        }
        self.close();
    });
    for (const auto& w : wrong) std::cerr << w << '\n';
    std::cout << (wrong.empty() ? "grid ok\n" : "grid FAILED\n");
    return wrong.empty() ? 0 : 1;
}
