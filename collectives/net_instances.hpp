#pragma once
// The collectives of a net_communicator for the value types and ops most
// programs use, compiled once into the csp_collectives library (the
// net_instances_*.cpp files) instead of in every file that calls them:
// instantiating every algorithm of an allreduce for one type costs a
// translation unit seconds. Any other type or op is instantiated where it
// is called, as before; the list changes nothing but compile time.
//
// The list is data: a value type or op added here is compiled in the
// library from then on.
#include <string>
#include <vector>

#include "collectives/dispatch.hpp"
#include "collectives/net_communicator.hpp"

// Values of every collective; values and ops of the reductions.
#define CSP_NET_VALUES(X) X(int) X(long) X(double) X(std::vector<int>) X(std::vector<long>) X(std::vector<double>)
#define CSP_NET_REDUCED(X) \
    X(int, sum) X(int, minimum) X(int, maximum) X(long, sum) X(long, minimum) X(long, maximum) \
    X(double, sum) X(double, minimum) X(double, maximum) X(std::vector<double>, sum) \
    X(std::vector<double>, minimum) X(std::vector<double>, maximum)

// `extern template` where used; `template` (an explicit instantiation) in
// the library, whose files define CSP_NET_INSTANTIATE first.
#ifdef CSP_NET_INSTANTIATE
#define CSP_NET_INSTANCE template
#else
#define CSP_NET_INSTANCE extern template
#endif

#define CSP_NET_VALUE_INSTANCES(T)                                                                                   \
    CSP_NET_INSTANCE T csp::collectives::broadcast<csp::collectives::net_communicator, T>(                           \
        csp::collectives::net_communicator&, T, int, csp::collectives::stream);                                      \
    CSP_NET_INSTANCE std::optional<std::vector<T>> csp::collectives::gather<csp::collectives::net_communicator, T>(   \
        csp::collectives::net_communicator&, T, int, csp::collectives::stream);                                      \
    CSP_NET_INSTANCE std::vector<T> csp::collectives::allgather<csp::collectives::net_communicator, T>(               \
        csp::collectives::net_communicator&, T, csp::collectives::stream);

#define CSP_NET_REDUCED_INSTANCES(T, OP)                                                                             \
    CSP_NET_INSTANCE T csp::collectives::allreduce<csp::collectives::net_communicator, T, csp::collectives::OP>(     \
        csp::collectives::net_communicator&, T, const csp::collectives::OP&, csp::collectives::stream);              \
    CSP_NET_INSTANCE std::optional<T>                                                                                \
        csp::collectives::reduce<csp::collectives::net_communicator, T, csp::collectives::OP>(                       \
            csp::collectives::net_communicator&, T, const csp::collectives::OP&, int, csp::collectives::stream);

#if !defined(CSP_NET_INSTANTIATE)
CSP_NET_VALUES(CSP_NET_VALUE_INSTANCES)
CSP_NET_REDUCED(CSP_NET_REDUCED_INSTANCES)
extern template void csp::collectives::barrier<csp::collectives::net_communicator>(csp::collectives::net_communicator&,
                                                                                    csp::collectives::stream);
#endif
