"""Merges trace files of ordo.stop_trace into one that Perfetto opens with every file's rows:

    /usr/bin/python3 -m ordo.merge_traces out.json in1.json in2.json ...

Times are moved to the earliest file's origin (every file's clock is the steady clock of its host: files of
one host line up). A process number that an earlier file already used is renumbered."""

import json
import sys


def merge(paths):
    traces = []
    for path in paths:
        with open(path) as f:
            traces.append(json.load(f))
    if not traces:
        raise ValueError("merge_traces: no input files")
    origins = [t.get("otherData", {}).get("origin_ns", 0) for t in traces]
    origin = min(origins)
    merged, used = [], set()
    for trace, own_origin in zip(traces, origins):
        events = trace["traceEvents"]
        pids = sorted({e["pid"] for e in events})
        renumber = {}
        for pid in pids:
            new = pid
            while new in used:
                new += 1
            renumber[pid] = new
        used.update(renumber.values())
        shift_us = (own_origin - origin) / 1000.0
        for event in events:
            event = dict(event, pid=renumber[event["pid"]])
            if "ts" in event:
                event["ts"] = round(event["ts"] + shift_us, 3)
            if event.get("name") == "process_name" and event["ph"] == "M":
                event["args"] = {"name": f"process {event['pid']}"}
            merged.append(event)
    return {"traceEvents": merged, "displayTimeUnit": "ns", "otherData": {"clock": "steady", "origin_ns": origin}}


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[0], "w") as f:
        json.dump(merge(argv[1:]), f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
