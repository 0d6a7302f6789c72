#!/usr/bin/env bash
# Every float32 input of exp, log, tanh, sigmoid, sqrt, rsqrt and erf, in
# every instruction set this CPU can run (SSE2, AVX2, AVX-512), against a
# float64 reference: the largest error in ulps per function and set, the
# inputs near each bound, and whether the sets give the same bits
# (tools/ulp_sweep.cc). Exits 1 when a bound is broken. On both cores, niced:
# about 30 minutes on 2 busy cores (SSE2 takes its FMA from the C library,
# lane by lane). Arguments go to the program, e.g.
#   scripts/ulp-sweep.sh --ops sigmoid --list 50
#   scripts/ulp-sweep.sh --stride 97        # a quick sample
# New inputs it lists near a bound belong in tests/vector_math_test.cc's
# kNearBoundInputs.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${ORDO_BUILD_DIR:-build}"
[[ -f "$build_dir/build.ninja" ]] || cmake -S . -B "$build_dir" -G Ninja >/dev/null
cmake --build "$build_dir" --target ordo_ulp_sweep >/dev/null
exec nice -n "${ORDO_SWEEP_NICE:-10}" "$build_dir/ordo_ulp_sweep" --threads "$(nproc)" "$@"
