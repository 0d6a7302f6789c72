#!/usr/bin/env bash
# Runs scripts/mpirun.sh and checks its output, for the tests where a
# process dies on purpose (mpirun then fails the job whatever the others
# did): the test passes only if every expectation holds.
#
#   mesh_expect.sh [--status N] [--expect COUNT REGEX]... [--no-new-files GLOB]... -- <scripts/mpirun.sh arguments>
#
# --status N: mpirun must exit with N. --expect COUNT REGEX: exactly COUNT
# lines of the output match the extended REGEX (0: none does; +: one or
# more). --no-new-files GLOB: no file matching GLOB that was not there
# before the run is there after it (such files are named, then removed).
# A line "ordo-mesh-test FAIL" always fails the test.
set -uo pipefail
status_wanted=""
expects=()
globs=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  case "$1" in
    --status) status_wanted=$2; shift 2 ;;
    --expect) expects+=("$2" "$3"); shift 3 ;;
    --no-new-files) globs+=("$2"); shift 2 ;;
    *) echo "mesh_expect.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] && shift
output=$(mktemp)
before=$(mktemp)
trap 'rm -f "$output" "$before"' EXIT
matching() {
  local glob
  for glob in "${globs[@]}"; do compgen -G "$glob" || true; done | sort
}
matching >"$before"
"$(dirname "$0")/../../scripts/mpirun.sh" "$@" >"$output" 2>&1
status=$?
cat "$output"
echo "mesh_expect.sh: mpirun exited with $status"
failed=0
if [ -n "$status_wanted" ] && [ "$status" -ne "$status_wanted" ]; then
  echo "mesh_expect.sh: FAIL: mpirun should have exited with $status_wanted"
  failed=1
fi
if grep -q "ordo-mesh-test FAIL" "$output"; then failed=1; fi
for ((i = 0; i < ${#expects[@]}; i += 2)); do
  count=$(grep -cE -- "${expects[i + 1]}" "$output")
  if [ "${expects[i]}" = + ]; then
    if [ "$count" -lt 1 ]; then
      echo "mesh_expect.sh: FAIL: expected lines matching '${expects[i + 1]}', found none"
      failed=1
    fi
  elif [ "$count" -ne "${expects[i]}" ]; then
    echo "mesh_expect.sh: FAIL: expected ${expects[i]} lines matching '${expects[i + 1]}', found $count"
    failed=1
  fi
done
new_files=$(matching | comm -13 "$before" -)
if [ -n "$new_files" ]; then
  echo "mesh_expect.sh: FAIL: the run left files behind (removed now):" $new_files
  rm -f $new_files
  failed=1
fi
exit $failed
