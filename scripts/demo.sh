#!/usr/bin/env bash
# Installs what is missing, builds, and runs the demo (examples/train_digits.py):
# on 4 in-process devices, or, given mpirun's arguments, across processes
# through scripts/mpirun.sh (Open MPI installed too), with the same lines:
#   scripts/demo.sh
#   scripts/demo.sh -np 2 -x ORDO_NUM_DEVICES=2
set -euo pipefail
cd "$(dirname "$0")/.."
# The digits ship with scikit-learn; tqdm draws the progress bars.
deps=(python3-sklearn python3-tqdm python3-matplotlib)
[ $# -eq 0 ] || deps+=(libopenmpi-dev openmpi-bin)
scripts/install-deps.sh "${deps[@]}"
scripts/build.sh
export PYTHONPATH="$PWD/python"
if [ $# -eq 0 ]; then
  exec /usr/bin/python3 examples/train_digits.py
fi
exec scripts/mpirun.sh -x PYTHONPATH "$@" /usr/bin/python3 examples/train_digits.py
