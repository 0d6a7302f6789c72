#!/usr/bin/env bash
# A/B runs of the core and all_reduce benchmarks: the commit BASE (default:
# the first parent of HEAD) against the working tree, alternated run by run,
# with each figure's median and their ratio. Usage:
#   scripts/bench-ab.sh [BASE [RUNS]]
#   scripts/bench-ab.sh --metrics-off [RUNS]   # this tree without metrics against it with them
# Pass the same commit twice (BASE=HEAD) to see the machine's noise: an A/A run.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--metrics-off" ]; then
  # The cost of the metrics (issue 16): this tree built without them as the
  # base, with them as the head; tracing and cache hits within 3%.
  runs="${2:-8}"
  scripts/build.sh
  cmake -S . -B build/ab-metrics-off -G Ninja -DORDO_METRICS=OFF -DORDO_BUILD_TESTS=OFF -DORDO_BUILD_PYTHON=OFF >/dev/null
  cmake --build build/ab-metrics-off --target ordo_bench_core ordo_bench_allreduce >/dev/null
  echo "base: $(git rev-parse --short HEAD) without metrics; head: the same with them"
  exec /usr/bin/python3 bench/ab.py build/ab-metrics-off build --runs "$runs" --target 1.03 --on "tracing|cache hit" --core-only
fi
base_rev="${1:-HEAD^}"
runs="${2:-8}"
scripts/build.sh
base_src="build/ab-base/src"
rm -rf "$base_src"
mkdir -p "$base_src"
git archive "$base_rev" | tar -x -C "$base_src"
cmake -S "$base_src" -B build/ab-base/build -G Ninja -DORDO_BUILD_TESTS=OFF -DORDO_BUILD_PYTHON=OFF >/dev/null
cmake --build build/ab-base/build --target ordo_bench_core ordo_bench_allreduce >/dev/null
echo "base: $(git rev-parse --short "$base_rev"); head: $(git rev-parse --short HEAD)$(git diff --quiet || echo ' + uncommitted changes')"
/usr/bin/python3 bench/ab.py build/ab-base/build build --runs "$runs"
