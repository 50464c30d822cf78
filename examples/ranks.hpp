#pragma once
// How the collectives examples find their ranks: started by csp-launch (or
// Slurm, or mpirun: see net/node_options.hpp), this process is one rank and
// its node talks TCP; started directly, the ranks are processes of this one
// runtime. The example's body is the same code either way. Asked to export a
// model (model_flags.hpp), the ranks run locally and their messages are
// recorded rank to rank.
#include <string>

#include "collectives/collectives.hpp"
#include "collectives/net_communicator.hpp"
#include "model_flags.hpp"
#include "csp/runtime.hpp"

namespace examples {

// Runs body(comm) at every rank; `local_ranks` is the group size when not
// launched.
template <class F>
void run_ranks(int local_ranks, model_flags& flags, const std::string& title, F body,
               csp::runtime_options runtime = {}) {
    auto ranks = [&] {
        if (flags.exporting() || launched_rank() < 0) {
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
    };
    flags.run(title, [&] { csp::run(ranks, runtime); });
}

}  // namespace examples
