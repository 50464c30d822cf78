#!/usr/bin/env bash
# The main job: install what is missing, build, run the examples: four nodes
# (OS processes) on this machine passing a token through ports, then the
# single-process examples.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2 --target csp-launch ring commstime listing1
echo "== ring: 4 nodes started by csp-launch, a token passed 3 times round through ports =="
./build/tools/csp-launch -n 4 ./build/examples/ring 3
echo "== commstime (4 processes in a ring, 1,000,000 loops) =="
./build/examples/commstime 1000000
echo "== listing 1 (producer -> consumer) =="
./build/examples/listing1
