#!/usr/bin/env bash
# Configures and builds ordo into build/ (or $ORDO_BUILD_DIR) with ninja.
# Extra arguments go to cmake, e.g. -DORDO_SANITIZE=thread.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${ORDO_BUILD_DIR:-build}"
cmake -S . -B "$build_dir" -G Ninja "$@" >/dev/null
cmake --build "$build_dir"
