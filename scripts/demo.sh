#!/usr/bin/env bash
# The main job: install what is missing, build, run the examples.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2 --target commstime listing1
echo "== commstime (4 processes in a ring, 1,000,000 loops) =="
./build/examples/commstime 1000000
echo "== listing 1 (producer -> consumer) =="
./build/examples/listing1
