#!/usr/bin/env python3
"""A/B runs of ordo's benchmarks: two builds, alternated run by run, each
figure's median for each, and their ratio. Usage:
  bench/ab.py BASE_BUILD_DIR HEAD_BUILD_DIR [--runs N] [--target RATIO --on REGEX]
The builds are directories holding ordo_bench_core and ordo_bench_allreduce
(scripts/bench-ab.sh makes them). Only ordo's own figures are compared: the
MPI reference of scripts/bench-allreduce.sh is the same for both builds.
With --target, the figures whose names match --on are held to it: a time's
ratio at most RATIO (a rate's at least 1 / RATIO), said in a last column."""
import argparse
import re
import statistics
import subprocess
import sys

def short_section(line):
    for words, short in [("100-node graph, device still running", "100-node step, steady"),
                         ("100-node graph, device idle", "100-node step, idle"),
                         ("1000-node graph", "1000-node step, unfused"),
                         ("24 elementwise ops", "24 ops over 4M floats"),
                         ("bias, relu", "bias+relu+scale")]:
        if words in line:
            return short
    return line.rstrip(":").strip()


def core_figures(output):
    figures = {}
    section = ""
    for line in output.splitlines():
        match = re.match(r"tracing one elementwise op \(median\):\s+([\d.]+) ns", line)
        if match:
            figures["tracing one elementwise op (ns)"] = (float(match.group(1)), False)
            continue
        if line and not line.startswith(" "):
            section = short_section(line)
            continue
        match = re.match(r"\s+(cache hit|cache miss|one kernel per op|fused)[^:]*:\s+([\d.]+) (us|ms)", line)
        if match:
            name = f"{section} / {match.group(1)} ({match.group(3)})"
            figures[name] = (float(match.group(2)), False)
    return figures


def allreduce_figures(output):
    figures = {}
    for line in output.splitlines():
        match = re.match(r"\s*(\d+ [KM]iB)\s+([\d.]+)\s", line)
        if match:
            figures[f"all_reduce {match.group(1):>6} (GB/s)"] = (float(match.group(2)), True)
            continue
        match = re.search(r"100 chained in one graph: ([\d.]+) us each", line)
        if match:
            figures["all_reduce 1 KiB chained (us each)"] = (float(match.group(1)), False)
    return figures


def run(command):
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("head")
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--target", type=float, help="the largest head / base ratio of a time allowed")
    parser.add_argument("--on", default=".", help="the figures --target applies to (a regular expression)")
    parser.add_argument("--core-only", action="store_true", help="only ordo_bench_core (half the time a round)")
    args = parser.parse_args()
    samples = {"base": {}, "head": {}}
    benches = [(["ordo_bench_core"], core_figures),
               (["ordo_bench_allreduce"], allreduce_figures)]
    if args.core_only:
        benches = benches[:1]
    for round_ in range(args.runs):
        # Alternate which build goes first, so that a drift of the machine
        # within a round weighs on both alike.
        order = [("base", args.base), ("head", args.head)]
        if round_ % 2:
            order.reverse()
        for command, parse in benches:
            for label, build in order:
                figures = parse(run([f"{build}/{command[0]}"] + command[1:]))
                for name, value in figures.items():
                    samples[label].setdefault(name, []).append(value)
        print(f"round {round_ + 1} of {args.runs} done", file=sys.stderr, flush=True)
    print(f"medians of {args.runs} alternated runs; ratio = head / base "
          "(above 1 is faster for GB/s, slower for times); paired: the median of each round's ratio, "
          "which a slow drift of the machine's load moves less")
    print(f"{'figure':58s} {'base':>10s} {'head':>10s} {'ratio':>7s} {'paired':>7s}   head range")
    for name in samples["base"]:
        base = [v for v, _ in samples["base"][name]]
        head = [v for v, _ in samples["head"].get(name, [])]
        if not head:
            continue
        ratio = statistics.median(head) / statistics.median(base)
        paired = statistics.median(h / b for h, b in zip(head, base))
        verdict = ""
        if args.target and re.search(args.on, name):
            higher_is_better = samples["base"][name][0][1]
            met = paired >= 1 / args.target if higher_is_better else paired <= args.target
            verdict = f"   target {args.target:.2f}: {'met' if met else 'MISSED'}"
        print(f"{name:58s} {statistics.median(base):10.2f} {statistics.median(head):10.2f} {ratio:7.3f} {paired:7.3f}"
              f"   {min(head):.2f}-{max(head):.2f}{verdict}")


if __name__ == "__main__":
    main()
