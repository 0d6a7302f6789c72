#!/usr/bin/env bash
# The protocol among processes under as many simulated schedules as you
# like (tests/sim/schedule_sweep.cc): SIM_SOAK_SCHEDULES (default 200000)
# from SIM_SOAK_FIRST (default: a random seed, printed), in blocks of
# 10000. Each seed that breaks a promise (a hang, a wrong value, a wrong
# error) is printed and then replayed, told step by step, up to three
# times (the faults replay exactly, the threads' interleaving may not);
# the script exits 1 if any did. Replay one yourself with
#   build/ordo_schedule_sweep --seed SEED
set -euo pipefail
cd "$(dirname "$0")/.."
schedules="${SIM_SOAK_SCHEDULES:-200000}"
first="${SIM_SOAK_FIRST:-$(( (RANDOM << 30) | (RANDOM << 15) | RANDOM ))}"
build="${ORDO_BUILD_DIR:-build}"
if [[ ! -x "$build/ordo_schedule_sweep" ]]; then scripts/build.sh; fi
echo "sim soak: $schedules schedules from seed $first"
failed=()
next="$first"
end=$(( first + schedules ))
while (( next < end )); do
  count=$(( end - next < 10000 ? end - next : 10000 ))
  out="$("$build/ordo_schedule_sweep" --first "$next" --count "$count" || true)"
  echo "$out" | grep -E '^(FAIL|HANG)|schedules' || true
  while read -r seed; do failed+=("$seed"); done < <(echo "$out" | grep -oE '^(FAIL|HANG): seed [0-9]+' | grep -oE '[0-9]+$')
  # A hang ends its block's process: the block goes on after the hung seed.
  hung="$(echo "$out" | grep -oE '^HANG: seed [0-9]+' | grep -oE '[0-9]+$' || true)"
  next=$(( ${hung:-$(( next + count - 1 ))} + 1 ))
done
for seed in "${failed[@]}"; do
  echo "sim soak: replaying seed $seed"
  for attempt in 1 2 3; do
    if ! timeout 60 "$build/ordo_schedule_sweep" --seed "$seed"; then echo "  (broke again on replay $attempt)"; break; fi
  done
done
if (( ${#failed[@]} )); then echo "sim soak: ${#failed[@]} seeds broke a promise: ${failed[*]}"; exit 1; fi
echo "sim soak: every schedule kept every promise"
