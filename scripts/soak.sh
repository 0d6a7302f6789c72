#!/usr/bin/env bash
# The soak run (not part of scripts/test.sh: 100,000 steps take a minute or
# more): bench/soak.py's two programs on 4 devices for 100,000 steps each,
# failing when the process grew more than 5 MiB after the first 1,000:
# a training-like loop that reads a value every 100 steps, then issue 39's
# loop in which only device 0 reads, twice (mark_step's bound on running
# ahead alone holds its memory). Arguments go to both, e.g. --steps 20000
# or --bound-mib 3.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
for program in training run-ahead; do
  PYTHONPATH=python /usr/bin/python3 bench/soak.py --program "$program" "$@"
done
