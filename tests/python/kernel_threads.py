"""Running a script under several ORDO_KERNEL_THREADS counts: the thread
count is read when the runtime starts, so each count gets a fresh process."""

import os
import subprocess
import sys

from package_dir import PYTHON_DIR


def digests_with_kernel_threads(script, counts=("1", "2")):
    """What script prints (a digest of its results) with each thread count."""
    digests = []
    for threads in counts:
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                                env=dict(os.environ, ORDO_KERNEL_THREADS=threads, PYTHONPATH=PYTHON_DIR))
        assert result.returncode == 0, result.stderr
        digests.append(result.stdout.strip())
    return digests
