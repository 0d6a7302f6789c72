"""A timeline of what ran, as Chrome trace event JSON (Perfetto, chrome://tracing) or a PNG:

    import ordo
    ordo.start_trace("/tmp/steps.json")
    ...                                  # steps and collectives
    ordo.stop_trace()                    # waits for the queued work, writes the file
    ordo.plot_timeline("/tmp/steps.json", "/tmp/steps.png")

Each device has a row "ordo:N host" (tracing between cuts, mark_step, compile) and a row "ordo:N" (execute
and each collective; a collective's args say its wait_us, the last_device to arrive and its bytes, and a
nested "wait" event shows the wait). Under mpirun every process calls both and process 0 writes one file;
`python3 -m ordo.merge_traces out.json a.json b.json` merges files of separate runs.
ORDO_TRACE_FILE=path traces from the runtime's start to its shutdown or the process's exit."""

import os

from . import _C


def start_trace(path):
    """Starts recording; ValueError for a folder that does not exist or while a trace is on."""
    _C.start_trace(os.fspath(path))


def stop_trace():
    """Waits for the devices' queued work, writes the trace and returns its path."""
    return _C.stop_trace()


def is_tracing():
    return _C.is_tracing()
