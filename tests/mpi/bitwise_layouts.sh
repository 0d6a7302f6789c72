#!/usr/bin/env bash
# The bitwise-layout property: tests/mpi/bitwise_layout.cc gives the same
# hash of every result of every device on 1 x 8 (one process, in-process),
# 2 x 4, 4 x 2 and 8 x 1 (processes x devices, under mpirun).
#
#   tests/mpi/bitwise_layouts.sh <bitwise_layout program> [launcher words...]
#
# The launcher (default scripts/mpirun.sh; scripts/two-hosts.sh for two
# hosts) gets "-np P -x ORDO_NUM_DEVICES=L program file" for each layout
# but 1 x 8, which runs without it. A launcher that exits 77 (skipped)
# makes this exit 77.
set -euo pipefail
program=$1
shift
root="$(cd "$(dirname "$0")/../.." && pwd)"
launcher=("$@")
[ ${#launcher[@]} -eq 0 ] && launcher=("$root/scripts/mpirun.sh")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

ORDO_NUM_DEVICES=8 "$program" "$work/1x8"
reference=$(cat "$work"/1x8.*)
[ -n "$reference" ]  # the program wrote its lines
failed=0
for layout in 2x4 4x2 8x1; do
  processes=${layout%x*} devices=${layout#*x}
  status=0
  "${launcher[@]}" --timeout 60 -np "$processes" -x ORDO_NUM_DEVICES="$devices" "$program" "$work/$layout" ||
    status=$?
  [ $status -eq 77 ] && exit 77  # the launcher cannot run here (scripts/two-hosts.sh without root)
  if [ $status -ne 0 ]; then
    echo "$layout: the run failed"
    failed=1
    continue
  fi
  got=$(cat $(ls -v "$work/$layout".*))
  if [ "$got" == "$reference" ]; then
    echo "$layout: the same $(printf '%s\n' "$got" | wc -l) hashes as 1x8"
  else
    echo "$layout: DIFFERS from 1x8:"
    diff <(printf '%s\n' "$reference") <(printf '%s\n' "$got") || true
    failed=1
  fi
done
exit $failed
