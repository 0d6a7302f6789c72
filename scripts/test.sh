#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
# Open MPI too: the MPI tests run when the build finds it (iproute2: the
# two-host tests, which need root, make network namespaces with ip), and
# PyTorch 1.13 (the reference of the gradient, nn and optimizer tests, and,
# with libtorch-dev's headers, the xla device: ordo._torch), and
# matplotlib, which draws the timeline's PNG; scikit-learn's digits for the
# test that runs the demo; torchvision (0.14, PyTorch 1.13's) for the
# MNIST-shaped torch_xla program.
scripts/install-deps.sh libopenmpi-dev openmpi-bin iproute2 python3-torch libtorch-dev python3-matplotlib python3-sklearn \
  python3-torchvision
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
# Debian's python3: the one the extension is built for, with numpy.
PYTHONPATH=python /usr/bin/python3 -m pytest -q tests/python
