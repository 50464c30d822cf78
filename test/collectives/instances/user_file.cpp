// A program's file calling the common collectives of a net_communicator
// (net_instances.hpp): its object must refer to the library's instances,
// not compile its own (check_instances.sh reads its symbols).
#include <vector>

#include "collectives/net_communicator.hpp"

double common_calls(csp::collectives::net_communicator& comm) {
    namespace cc = csp::collectives;
    double x = cc::allreduce(comm, 1.5, cc::sum{});
    std::vector<double> v = cc::allreduce(comm, std::vector<double>{1, 2}, cc::maximum{});
    v = cc::broadcast(comm, v, 0);
    const auto all = cc::allgather(comm, 3L);
    cc::barrier(comm);
    return x + v[0] + static_cast<double>(all.size());
}
