// One rank of the network grid: run by csp-launch as one OS process per
// rank. Prints what went wrong and exits 1, or prints "grid ok" and exits 0.
#include <iostream>

#include "collectives/net_communicator.hpp"
#include "csp/runtime.hpp"
#include "grid.hpp"

int main() {
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
