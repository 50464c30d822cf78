#!/usr/bin/env bash
# check_instances.sh OBJECT: every common collective user_file.cpp calls is
# an undefined symbol of its object (taken from the library), none defined
# in it (compiled again in the program's file).
set -euo pipefail
symbols=$(nm -C "$1")
status=0
for call in \
  'double csp::collectives::allreduce<csp::collectives::net_communicator, double, csp::collectives::sum>' \
  'std::vector<double, std::allocator<double> > csp::collectives::allreduce<csp::collectives::net_communicator, std::vector<double, std::allocator<double> >, csp::collectives::maximum>' \
  'std::vector<double, std::allocator<double> > csp::collectives::broadcast<csp::collectives::net_communicator, std::vector<double, std::allocator<double> > >' \
  'std::vector<long, std::allocator<long> > csp::collectives::allgather<csp::collectives::net_communicator, long>' \
  'void csp::collectives::barrier<csp::collectives::net_communicator>'; do
  if ! grep -qF " U $call(" <<<"$symbols"; then
    echo "not taken from the library: $call"
    grep -F "$call(" <<<"$symbols" || true
    status=1
  fi
done
defined=$(grep -E ' [TW] .*csp::collectives::(allreduce|broadcast|allgather|barrier|reduce)<csp::collectives::net_communicator' <<<"$symbols" || true)
if [[ -n "$defined" ]]; then
  echo "compiled in the program's file:"
  echo "$defined"
  status=1
fi
[[ $status == 0 ]] && echo "all 5 common collectives come from the library"
exit $status
