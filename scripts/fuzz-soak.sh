#!/usr/bin/env bash
# The differential fuzzer for as long as you like: ORDO_FUZZ_PROGRAMS
# programs (default 200000) from ORDO_FUZZ_SEED (default: a random seed,
# printed), or for ORDO_FUZZ_SECONDS seconds. On a failure it prints the
# seed, the program and its shrunk form and exits 1; if a program crashes
# the process, it prints that program's seed. Replay a seed with
#   PYTHONPATH=python /usr/bin/python3 tests/python/fuzz --replay SEED
set -euo pipefail
cd "$(dirname "$0")/.."
programs="${ORDO_FUZZ_PROGRAMS:-200000}"
seed="${ORDO_FUZZ_SEED:-$(( (RANDOM << 30) | (RANDOM << 15) | RANDOM ))}"
if ! compgen -G "python/ordo/_C*.so" >/dev/null; then scripts/build.sh; fi
seed_file="$(mktemp)"
trap 'rm -f "$seed_file"' EXIT
limit=()
if [[ -n "${ORDO_FUZZ_SECONDS:-}" ]]; then limit=(--time-limit "$ORDO_FUZZ_SECONDS"); fi
echo "fuzz soak: $programs programs from seed $seed"
status=0
PYTHONPATH=python /usr/bin/python3 tests/python/fuzz --programs "$programs" --seed "$seed" --progress 5000 \
  --seed-file "$seed_file" "${limit[@]}" || status=$?
if (( status > 1 )); then
  echo "fuzz soak: the process died (status $status) in the program of seed $(cat "$seed_file");" \
       "replay it with: PYTHONPATH=python /usr/bin/python3 tests/python/fuzz --replay $(cat "$seed_file")"
fi
exit "$status"
