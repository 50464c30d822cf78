// net_instances.hpp: allreduce and reduce.
#define CSP_NET_INSTANTIATE
#include "collectives/net_instances.hpp"

CSP_NET_REDUCED(CSP_NET_REDUCED_INSTANCES)
