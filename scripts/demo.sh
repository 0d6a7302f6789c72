#!/usr/bin/env bash
# Installs what is missing, builds, and runs the demo
# (examples/train_digits_torch_xla.py, a torch_xla program on ordo):
# on 4 in-process devices, or, given mpirun's arguments, across processes
# through scripts/mpirun.sh (Open MPI installed too), with the same lines:
#   scripts/demo.sh
#   scripts/demo.sh -np 2 -x ORDO_NUM_DEVICES=2
set -euo pipefail
cd "$(dirname "$0")/.."
# The digits ship with scikit-learn; PyTorch and its headers make the xla
# device (ordo._torch); matplotlib draws the timeline.
deps=(python3-sklearn python3-matplotlib python3-torch libtorch-dev)
[ $# -eq 0 ] || deps+=(libopenmpi-dev openmpi-bin)
scripts/install-deps.sh "${deps[@]}"
scripts/build.sh
export PYTHONPATH="$PWD/python"
if [ $# -eq 0 ]; then
  exec /usr/bin/python3 examples/train_digits_torch_xla.py
fi
exec scripts/mpirun.sh -x PYTHONPATH "$@" /usr/bin/python3 examples/train_digits_torch_xla.py
