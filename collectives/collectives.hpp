#pragma once
// Collective operations written as process networks.
//
// A communicator (communicator.hpp) is one rank's view of a group; ranks are
// processes of one runtime (local_communicator.hpp) or nodes of a job
// (net_communicator.hpp). The collectives by plain name choose an algorithm
// from a table (dispatch.hpp, selection.hpp); each algorithm can also be
// called by its own name (broadcast.hpp, reduce.hpp, ...). Who talks to whom
// is in topology.hpp; Aspen's reduce with any participants and receivers in
// aspen_reduce.hpp; collectives as processes with channel ends in flow.hpp;
// a tracing communicator in trace.hpp; sub-groups (MPI's split) in
// group.hpp; two-level collectives (ranks of a host, then one leader per
// host) in hierarchy.hpp; shared reduction variables whose updates are
// fused into one reduction per force point in shared.hpp; ranks on a grid
// (cartesian.hpp) and halo exchange into the caller's buffers (neighbours.hpp). docs/collectives.md lists every
// algorithm's steps and messages.
#include "collectives/aspen_reduce.hpp"
#include "collectives/cartesian.hpp"
#include "collectives/dispatch.hpp"
#include "collectives/flow.hpp"
#include "collectives/group.hpp"
#include "collectives/hierarchy.hpp"
#include "collectives/local_communicator.hpp"
#include "collectives/neighbours.hpp"
#include "collectives/receive_view.hpp"
#include "collectives/relay.hpp"
#include "collectives/shared.hpp"
#include "collectives/trace.hpp"
#include "csp/csp.hpp"  // csp::run, par, select: a program needs no other include
