#!/usr/bin/env bash
# The soak run (not part of scripts/test.sh: 100,000 steps take a minute or
# more): a training-like loop on 4 devices for 100,000 steps, failing when
# the process grew more than 5 MiB after the first 1,000. Arguments go to
# bench/soak.py, e.g. --steps 20000 or --bound-mib 3.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
PYTHONPATH=python /usr/bin/python3 bench/soak.py "$@"
