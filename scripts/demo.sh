#!/usr/bin/env bash
# The main job: install what is missing, build, run the examples: nodes (OS
# processes) on this machine computing with collectives and passing a token
# through ports, then the single-process examples.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2 --target csp-launch ring pi heat fit_loop figure5 variance plankton jacobi mmult commstime listing1
echo "== pi: 4 nodes started by csp-launch, one allreduce over TCP =="
./build/tools/csp-launch -n 4 ./build/examples/pi
echo "== heat: 4 nodes, rows on a grid, halo rows exchanged into place each step, an allreduce every 10 =="
./build/tools/csp-launch -n 4 ./build/examples/heat 512 500
echo "== heat again, traced: one Perfetto timeline of the 4 nodes (open build/heat-trace.json in ui.perfetto.dev) =="
./build/tools/csp-launch -n 4 --trace build/heat-trace.json ./build/examples/heat 128 50
echo "== heat with a bug (odd ranks skip their exchange): the job-wide deadlock report =="
./build/tools/csp-launch -n 4 ./build/examples/heat 64 20 --forget-halo 2>&1 | grep -v "^\[" || true
echo "== fit_loop: 4 nodes fitting a curve, an allreduce of the error vector each step =="
./build/tools/csp-launch -n 4 ./build/examples/fit_loop
echo "== variance: 4 nodes, shared variables: two sums per batch fused into one reduction =="
./build/tools/csp-launch -n 4 ./build/examples/variance
echo "== plankton: 4 nodes, 27 shared environment values per step resolved in 3 fused reductions =="
./build/tools/csp-launch -n 4 ./build/examples/plankton
echo "== jacobi: 4 nodes, bulk-synchronous, split-phase by hand, task graph (dataflow) and computation alone =="
./build/tools/csp-launch -n 4 ./build/examples/jacobi all 256 1024 100 8
echo "== jacobi as a task graph: when each block ran on each node (digits: the step) =="
./build/tools/csp-launch -n 4 ./build/examples/jacobi graph 64 512 12 4 --gantt
echo "== mmult: 2 x 2 nodes, Cannon's algorithm with panels, the task graph under each queue and priority =="
./build/tools/csp-launch -n 4 ./build/examples/mmult priorities 256 4 2
echo "== figure5: two reductions at once on overlapping ranks, wired as processes =="
./build/examples/figure5
echo "== ring: 4 nodes started by csp-launch, a token passed 3 times round through ports =="
./build/tools/csp-launch -n 4 ./build/examples/ring 3
echo "== commstime (4 processes in a ring, 1,000,000 loops) =="
./build/examples/commstime 1000000
echo "== listing 1 (producer -> consumer) =="
./build/examples/listing1
