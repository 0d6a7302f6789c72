#!/usr/bin/env bash
# Runs the test suite under sanitizers: `address` (ASan + UBSan, every test)
# or `thread` (TSan: the conformance suites, the rendezvous and its round counts, concurrent, executor, collective, buffer donation,
# token, spawn, block cache, soak bounds, free-core pool, the kernels that split on it (convolutions
# through oneDNN among them), worker, host ring and metrics tests,
# 1,000 schedules of the simulated transport,
# then every MPI test, one at a time).
# Each builds into its own build-<kind>/. `address` also builds the Python
# extensions (ordo._C, and ordo._torch under PyTorch's xla device) into
# build-address/python/ordo/ and runs the Python tests on them, with the
# sanitizers' runtimes preloaded into Debian's python3.
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:?usage: scripts/sanitize.sh address|thread}"
scripts/install-deps.sh
export ORDO_BUILD_DIR="build-$kind"
package="$PWD/$ORDO_BUILD_DIR/python"
if [ "$kind" = address ]; then python_options=(-DORDO_BUILD_PYTHON=ON "-DORDO_PYTHON_PACKAGE_DIR=$package/ordo"); else python_options=(-DORDO_BUILD_PYTHON=OFF); fi
scripts/build.sh -DORDO_SANITIZE="$kind" -DORDO_BUILD_BENCHMARKS=OFF "${python_options[@]}" -DCMAKE_BUILD_TYPE=Debug
# A huge allocation must fail like any other (OutOfMemoryError), not abort.
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
if [ "$kind" = thread ]; then
  ctest --test-dir "$ORDO_BUILD_DIR" --output-on-failure -j "$(nproc)" \
    -R 'Conv|PoolBatchNorm|Conformance|Topology|Concurrency|Executor|RuntimeLifecycle|Collective|Token|WorldSizes|Fusion|BufferDonation|DataParallelDonation|Spawn|ThreadBlockCache|BufferPool|SoakBounds|FreeCores|Matmul|ReduceOrder|RowBlocks|DropPendingGraph|Worker|Rendezvous|ExchangeRounds|HostRings|Metrics|WallClock' \
    -LE mpi
  # The protocol among processes over the simulated transport: a thousand
  # seeded schedules (the test command runs ten thousand without TSan).
  "$ORDO_BUILD_DIR/ordo_schedule_sweep" --first 0 --count 1000
  # Open MPI's own libraries trip TSan (the threads MPI_Init starts, its
  # progress engine), so their reports are suppressed; the processes that
  # mpirun starts inherit this. One test at a time, as two large layouts
  # at once outgrow a 24 GiB machine; and without mpi_matches_in_process
  # at 4 x 2, whose four processes each hold 6 GB under TSan (the OOM
  # killer ends one even alone; its 3 x 2 and 4 x 1 layouts run).
  TSAN_OPTIONS="$TSAN_OPTIONS:suppressions=$PWD/tests/mpi/tsan_openmpi.supp" \
    ctest --test-dir "$ORDO_BUILD_DIR" --output-on-failure -j 1 -L mpi -E '^mpi_matches_in_process_4x2$'
else
  ctest --test-dir "$ORDO_BUILD_DIR" --output-on-failure -j "$(nproc)" -LE mpi
  # Open MPI leaks what it allocates at start (full stacks, so that the
  # suppressions see MPI_Init_thread below its plugins); the processes that
  # mpirun starts here inherit this.
  LSAN_OPTIONS="suppressions=$PWD/tests/mpi/lsan_openmpi.supp:fast_unwind_on_malloc=0" \
    ctest --test-dir "$ORDO_BUILD_DIR" --output-on-failure -j "$(nproc)" -L mpi
  # The Python tests on the sanitized extensions: the package's Python files
  # beside them, found through PYTHONPATH (tests/python/package_dir.py).
  # python3 is not built with ASan, so its runtime comes first, and
  # libstdc++ with it (ASan's __cxa_throw needs it from the start).
  # Python's own allocations at exit are not ours: no leak check here.
  (cd python && tar cf - --exclude='*.so' --exclude=__pycache__ ordo) | (cd "$package" && tar xf -)
  LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so)" \
    ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 PYTHONPATH="$package" \
    /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/python
fi
