"""The ordo package the tests import, in this process and in the processes
they start: the source tree's python/, unless PYTHONPATH names another build
of the package first (scripts/sanitize.sh runs the tests on its sanitized
extensions that way)."""

import os
from pathlib import Path


def _package_dir():
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if entry and (Path(entry) / "ordo" / "__init__.py").is_file():
            return str(Path(entry).resolve())
    return str(Path(__file__).resolve().parents[2] / "python")


PYTHON_DIR = _package_dir()
