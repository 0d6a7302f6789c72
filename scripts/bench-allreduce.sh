#!/usr/bin/env bash
# The all_reduce benchmark: Open MPI's MPI_Allreduce (2 processes) and ordo
# (2 in-process devices) on the same sizes, in one run, with memcpy bandwidth.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh libopenmpi-dev openmpi-bin
scripts/build.sh
mpicc -O2 -o build/mpi_allreduce bench/mpi_allreduce.c
root_flag=""
[ "$(id -u)" -eq 0 ] && root_flag="--allow-run-as-root"
results=$(mktemp)
mpirun -np 2 --oversubscribe $root_flag --mca btl self,vader build/mpi_allreduce > "$results"
build/ordo_bench_allreduce "$results"
rm -f "$results"
