"""The main job (scripts/demo.sh's program) runs to its end: its accuracy,
the bitwise check across devices and every collective all hold."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from package_dir import PYTHON_DIR

pytest.importorskip("ordo.torch_xla")

ROOT = Path(__file__).resolve().parents[2]


def test_the_torch_xla_demo_matches_everything():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "ORDO_"))}
    env["PYTHONPATH"] = PYTHON_DIR
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "train_digits_torch_xla.py")], env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "every device holds the same weights: yes" in result.stdout
    assert "everything matched: yes" in result.stdout
