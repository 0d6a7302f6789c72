#!/usr/bin/env bash
# A/B runs of the core and all_reduce benchmarks: the commit BASE (default:
# the first parent of HEAD) against the working tree, alternated run by run,
# with each figure's median and their ratio. Usage:
#   scripts/bench-ab.sh [BASE [RUNS]]
#   scripts/bench-ab.sh --metrics-off [RUNS]   # this tree without metrics against it with them
# Pass the same commit twice (BASE=HEAD) to see the machine's noise: an A/A run.
set -euo pipefail
cd "$(dirname "$0")/.."

# Both sides are built alike, benchmarks only, each from a copy of its
# sources at a path as long as the other's: the paths end up in the
# library's strings, and a build from build/ab-base/src against one from
# the checkout moved tracing by 7% and a fused step by 11% in an A/A run
# (the code's layout; BENCHMARKS.md, #38).
build_benches() {
  local source=$1 build=$2
  shift 2
  cmake -S "$source" -B "$build" -G Ninja -DORDO_BUILD_TESTS=OFF -DORDO_BUILD_PYTHON=OFF "$@" >/dev/null
  cmake --build "$build" --target ordo_bench_core ordo_bench_allreduce >/dev/null
}
# The working tree as it is (uncommitted changes included) into $1.
copy_working_tree() {
  rm -rf "$1"
  mkdir -p "$1"
  git ls-files -z --cached --others --exclude-standard |
    tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -x -m -C "$1"
}
if [ "${1:-}" = "--metrics-off" ]; then
  # The cost of the metrics (issue 16): this tree built without them as the
  # base, with them as the head; tracing and cache hits within 3%.
  runs="${2:-8}"
  copy_working_tree build/ab-head/src
  build_benches build/ab-head/src build/ab-head/off -DORDO_METRICS=OFF
  build_benches build/ab-head/src build/ab-head/on
  echo "base: $(git rev-parse --short HEAD) without metrics; head: the same with them"
  exec /usr/bin/python3 bench/ab.py build/ab-head/off build/ab-head/on --runs "$runs" --target 1.03 --on "tracing|cache hit" --core-only
fi
base_rev="${1:-HEAD^}"
runs="${2:-8}"
base_src="build/ab-base/src"
rm -rf "$base_src"
mkdir -p "$base_src"
git archive "$base_rev" | tar -x -m -C "$base_src"  # -m: new mtimes, so that ninja rebuilds what differs from the last base
build_benches "$base_src" build/ab-base/build
copy_working_tree build/ab-head/src
build_benches build/ab-head/src build/ab-head/build
echo "base: $(git rev-parse --short "$base_rev"); head: $(git rev-parse --short HEAD)$(git diff --quiet || echo ' + uncommitted changes')"
/usr/bin/python3 bench/ab.py build/ab-base/build build/ab-head/build --runs "$runs"
