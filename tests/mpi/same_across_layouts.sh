#!/usr/bin/env bash
# A program prints the same lines on a world of N devices whatever its
# layout: one process of N devices (in-process), and P processes of N/P
# devices under mpirun for every P > 1 that divides N.
#
#   tests/mpi/same_across_layouts.sh [--two-hosts] N REGEX program [arguments...]
#
# Only the lines matching REGEX (grep -E) are compared. --two-hosts runs the
# processes on scripts/two-hosts.sh's two hosts (exit 77, skipped, where it
# cannot); otherwise scripts/mpirun.sh. Each run has mpirun's bound on its
# time.
#   tests/mpi/same_across_layouts.sh 8 '^ordinal' build/bitwise_layout   # 1x8 = 2x4 = 4x2 = 8x1
#   tests/mpi/same_across_layouts.sh 4 '^  device|matched' build/ordo_demo
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
launcher=$root/scripts/mpirun.sh
if [ "${1:-}" = --two-hosts ]; then
  launcher=$root/scripts/two-hosts.sh
  shift
fi
world=$1 pattern=$2
shift 2

reference=$(ORDO_NUM_DEVICES=$world "$@" | grep -E "$pattern")  # set -e: a failed run or no lines ends the test
failed=0
for ((processes = 2; processes <= world; ++processes)); do
  ((world % processes == 0)) || continue
  layout=${processes}x$((world / processes))
  status=0
  got=$("$launcher" --timeout 60 -np "$processes" -x ORDO_NUM_DEVICES=$((world / processes)) "$@") || status=$?
  [ $status -eq 77 ] && exit 77  # two hosts cannot be made here
  got=$(printf '%s\n' "$got" | grep -E "$pattern" || true)
  if [ $status -ne 0 ]; then
    echo "$layout: the run failed (exit $status)"
    failed=1
  elif [ "$got" == "$reference" ]; then
    echo "$layout: the same $(printf '%s\n' "$got" | wc -l) lines as 1x$world"
  else
    echo "$layout: DIFFERS from 1x$world:"
    diff <(printf '%s\n' "$reference") <(printf '%s\n' "$got") || true
    failed=1
  fi
done
exit $failed
