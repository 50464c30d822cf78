// Only collectives/collectives.hpp: three ranks as fibers sum their numbers.
#include "collectives/collectives.hpp"

int collectives_alone() {
    const auto sums = csp::run([] {
        return csp::collectives::run_local(3, [](csp::collectives::local_communicator& c) {
            return csp::collectives::allreduce(c, c.rank() + 1, csp::collectives::sum{});
        });
    });
    return sums[0] + sums[1] + sums[2];
}
