"""The fuzzer from the command line (scripts/fuzz-soak.sh runs it):

    PYTHONPATH=python /usr/bin/python3 tests/python/fuzz --programs 3000 --seed 0
    PYTHONPATH=python /usr/bin/python3 tests/python/fuzz --replay 1234

Prints a summary of the ops covered; on a failure, the failing seed, the
program and its shrunk form, and exits with status 1."""

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a directory: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "fuzz"  # noqa: A001

from fuzz.driver import run_programs, start_runtime  # noqa: E402
from fuzz.generate import generate  # noqa: E402
from fuzz.program import listing  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description="ordo's differential fuzzer")
    parser.add_argument("--programs", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0, help="the first program's seed")
    parser.add_argument("--replay", type=int, help="check only the program of this seed, and print it")
    parser.add_argument("--time-limit", type=float, help="stop after this many seconds")
    parser.add_argument("--progress", type=int, default=0, help="print progress every N programs")
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--seed-file", help="write each program's seed here before running it, so that the "
                                             "seed of a program that crashes the process is known")
    args = parser.parse_args()
    start_runtime()
    if args.replay is not None:
        print(listing(generate(args.replay)))
        args.seed, args.programs = args.replay, 1
    start = time.monotonic()
    checked, covered, failure = run_programs(args.seed, args.programs, args.time_limit, args.progress,
                                             not args.no_shrink, args.seed_file)
    elapsed = time.monotonic() - start
    print(f"checked {checked} programs (seeds {args.seed}..{args.seed + checked - 1}) in {elapsed:.1f} s")
    print("covered: " + ", ".join(f"{name}={n}" for name, n in sorted(covered.items())))
    if failure:
        print(failure)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
