// net_instances.hpp: broadcast, gather, allgather and barrier.
#define CSP_NET_INSTANTIATE
#include "collectives/net_instances.hpp"

CSP_NET_VALUES(CSP_NET_VALUE_INSTANCES)
template void csp::collectives::barrier<csp::collectives::net_communicator>(csp::collectives::net_communicator&,
                                                                             csp::collectives::stream);
