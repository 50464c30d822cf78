#pragma once
// How the collectives examples find their ranks: started by csp-launch (or
// Slurm, or mpirun: see net/node_options.hpp), this process is one rank and
// its node talks TCP; started directly, the ranks are processes of this one
// runtime. The example's body is the same code either way.
#include <cstdlib>
#include <string>

#include "collectives/collectives.hpp"
#include "collectives/net_communicator.hpp"
#include "csp/runtime.hpp"

namespace examples {

inline bool launched() {
    for (const char* v : {"CSP_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
        if (std::getenv(v)) return true;
    return false;
}

// Runs body(comm) at every rank; `local_ranks` is the group size when not
// launched.
template <class F>
void run_ranks(int local_ranks, F body) {
    csp::run([&] {
        if (!launched()) {
            csp::collectives::run_local(local_ranks, [&](auto& comm) { body(comm); });
            return;
        }
        csp::net::node self;
        {
            csp::collectives::net_communicator comm(self);
            body(comm);
            csp::collectives::barrier(comm);  // nobody leaves while others still receive
        }
        self.close();
    });
}

}  // namespace examples
