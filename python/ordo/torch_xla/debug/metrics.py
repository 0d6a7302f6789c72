"""torch_xla.debug.metrics over ordo's metrics (one registry for both front
ends): the same report format, names and readers. Each op that fell back
to PyTorch's CPU kernels is the counter aten::<op>, as torch_xla counts it."""

import ordo

metrics_report = ordo.metrics_report
metric_names = ordo.metric_names
metric_data = ordo.metric_data  # (total samples, accumulator, [(ns since the epoch, value), ...]), or None
counter_names = ordo.counter_names
counter_value = ordo.counter_value
clear_counters = ordo.clear_counters
clear_metrics = ordo.clear_metrics
clear_all = ordo.clear_all


def short_metrics_report(counter_names=None, metric_names=None):
    """The report's entries for the given counters and metrics only (by
    default the compiles, executions and every fallback)."""
    fallbacks = counter_names is None
    counters = counter_names or ["CachedCompile", "UncachedCompile", "MarkStep"]
    metrics = metric_names or ["CompileTime", "ExecuteTime"]
    kept, keep = [], False
    for line in ordo.metrics_report().splitlines():
        if line.startswith(("Metric: ", "Counter: ")):
            name = line.split(": ", 1)[1]
            keep = name in counters or name in metrics or (fallbacks and name.startswith("aten::"))
        if keep:
            kept.append(line)
    return "".join(line + "\n" for line in kept)
