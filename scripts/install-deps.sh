#!/usr/bin/env bash
# Installs the Debian packages the build needs, if any is missing.
set -euo pipefail
packages=(cmake g++ make libboost-fiber1.81-dev libboost-context1.81-dev libboost1.81-dev
          libgtest-dev googletest libbenchmark-dev libcereal-dev libsodium-dev libucx-dev spin
          clang libclang-rt-14-dev libtbb-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
