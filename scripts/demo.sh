#!/usr/bin/env bash
# Installs what is missing, builds, and runs the demo: on 4 in-process
# devices, or, given mpirun's arguments, across processes through
# scripts/mpirun.sh (Open MPI installed too), with the same per-device lines:
#   scripts/demo.sh
#   scripts/demo.sh -np 2 -x ORDO_NUM_DEVICES=2
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
  scripts/install-deps.sh
  scripts/build.sh
  exec build/ordo_demo
fi
scripts/install-deps.sh libopenmpi-dev openmpi-bin
scripts/build.sh
exec scripts/mpirun.sh "$@" build/ordo_demo
