"""ordo.plot_timeline: a trace file of ordo.stop_trace drawn as a PNG, without a browser.

Every row of the trace (a device's host row and its worker's row, per process) is a band; steps and
collectives are coloured by kind, a collective's wait is drawn over it in red, and each device row says
at how many collectives it was the last to arrive: the late device is the one whose peers wait for it.
matplotlib (Debian's python3-matplotlib) is imported only here, with its Agg backend."""

import json

# By event category: what the recorder writes (core/trace_events.h).
COLOURS = {
    "trace": "#c7d7ef",
    "step": "#4c78a8",
    "compile": "#f58518",
    "execute": "#54a24b",
    "collective": "#b279a2",
    "wait": "#e45756",
}


def _rows(events):
    """{(pid, tid): name}, ordered as Perfetto orders them."""
    names, order = {}, {}
    for e in events:
        if e.get("ph") != "M" or "tid" not in e:
            continue
        key = (e["pid"], e["tid"])
        if e["name"] == "thread_name":
            names[key] = e["args"]["name"]
        elif e["name"] == "thread_sort_index":
            order[key] = e["args"]["sort_index"]
    for e in events:
        if e.get("ph") == "X":
            names.setdefault((e["pid"], e["tid"]), f"pid {e['pid']} tid {e['tid']}")
    return sorted(names, key=lambda k: (k[0], order.get(k, k[1]), k[1])), names


# Nested events are drawn thinner, over what encloses them.
HEIGHTS = {"collective": 0.6, "wait": 0.4}


def _arrivals(spans):
    """{(pid, tid): [collectives of the row its device came last to, collectives with a known last device,
    microseconds waited]}."""
    rows = {}
    for e in spans:
        if e.get("cat") == "collective" and "last_device" in e.get("args", {}):
            row = rows.setdefault((e["pid"], e["tid"]), [0, 0, 0.0])
            row[0] += e["args"]["last_device"] == e["tid"]
            row[1] += 1
            row[2] += e["args"]["wait_us"]
    return rows


def plot_timeline(trace_path, png_path, title=None):
    """Draws trace_path (a Chrome trace JSON of ordo's) into png_path; returns png_path."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    rows, names = _rows(events)
    index = {key: i for i, key in enumerate(rows)}
    spans = [e for e in events if e.get("ph") == "X"]
    end = max((e["ts"] + e["dur"] for e in spans), default=1.0)
    figure = Figure(figsize=(12, 0.5 * len(rows) + 1.5))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    for e in sorted(spans, key=lambda e: -HEIGHTS.get(e["cat"], 0.8)):
        height = HEIGHTS.get(e["cat"], 0.8)
        axes.broken_barh([(e["ts"], max(e["dur"], end * 1e-4))], (index[(e["pid"], e["tid"])] - height / 2, height),
                         facecolors=COLOURS.get(e["cat"], "#999999"), linewidth=0)
    for key, (last, total, waited) in _arrivals(spans).items():
        axes.text(1.005, 1 - (index[key] + 0.5) / len(rows), f"last at {last}/{total}\nwaited {waited / 1e3:.1f} ms",
                  transform=axes.transAxes, fontsize=8, va="center")
    axes.set_yticks(range(len(rows)))
    axes.set_yticklabels([names[key] for key in rows])
    axes.set_ylim(len(rows) - 0.5, -0.5)
    axes.set_xlim(0, end)
    axes.set_xlabel("time (us)")
    axes.set_title(title or trace_path)
    axes.legend(handles=[Patch(color=c, label=k) for k, c in COLOURS.items()], loc="upper center",
                bbox_to_anchor=(0.5, -0.12 if len(rows) > 4 else -0.25), ncol=len(COLOURS), fontsize=8)
    figure.tight_layout()
    figure.savefig(png_path, dpi=100)
    return png_path
