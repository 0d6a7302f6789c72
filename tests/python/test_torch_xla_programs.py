"""torch_xla programs (tests/torch_xla_programs/: the shape of torch_xla's
own multiprocess tests and of its MNIST example, only their imports naming
ordo) run as a user runs them: /usr/bin/python3 on 4 in-process devices,
each in its own process with a time limit, so that a hang fails. Each
program checks its results itself and exits nonzero on a wrong one; here
its exit status and what it prints are checked. The same programs run under
mpirun at 2 processes x 2 devices from ctest (tests/mpi/mpi_tests.cmake)."""

import importlib.util
import io
import os
import re
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("ordo.torch_xla")

import ordo.torch_xla.core.xla_model as xm  # noqa: E402
import ordo.torch_xla.debug.metrics as met  # noqa: E402
import ordo.torch_xla.test.test_utils as test_utils  # noqa: E402
from package_dir import PYTHON_DIR

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "tests" / "torch_xla_programs"
DEVICES = 4
TIME_LIMIT_SECONDS = 120


def run(program, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "ORDO_"))}
    env.update(PYTHONPATH=PYTHON_DIR, ORDO_NUM_DEVICES=str(DEVICES))
    return subprocess.run(["/usr/bin/python3", str(PROGRAMS / program), *args], env=env, capture_output=True,
                          text=True, timeout=TIME_LIMIT_SECONDS)


def run_to_success(program, *args):
    result = run(program, *args)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.mark.parametrize("name", ["all_gather", "reduce_scatter", "all_to_all", "collective_permute", "replication",
                                  "mesh_reduce", "distributed_mm", "torch_distributed"])
def test_a_collective_program_passes_its_checks(name):
    assert run_to_success(f"mp_{name}.py").splitlines() == [f"{name} ok"]


def test_the_sync_batch_norm_program_matches_cpu_batch_norm_in_1d_2d_and_3d():
    assert run_to_success("mp_sync_batch_norm.py").splitlines() == [
        "1d without channels ok", "1d with channels ok", "2d ok", "3d ok"]


def test_the_rendezvous_program_meets_in_halves():
    lines = run_to_success("mp_rendezvous.py").splitlines()
    assert lines[-1] == "rendezvous ok"
    assert sorted(lines[:-1]) == sorted([f"replica {i} waits for its half" for i in range(DEVICES)] +
                                        [f"replica {i} met its half" for i in range(DEVICES)])


def test_the_save_program_shares_one_file(tmp_path):
    path = tmp_path / "state.pt"
    assert run_to_success("mp_save.py", str(path)).splitlines() == ["save ok"]
    assert not path.exists()  # the master removed it once everyone had read it


def test_a_single_device_program_in_a_process_of_four_devices_is_one_replica():
    lines = run_to_success("train_single_device.py").splitlines()
    assert lines[0] == "world 1, ordinal 0, master True"
    assert re.fullmatch(r"trained as on the CPU, loss [\d.]+", lines[1])


def test_the_mnist_program_learns_the_digits_compiling_few_graphs():
    pytest.importorskip("torchvision")
    out = run_to_success("train_mp_mnist.py", "--num_epochs", "3", "--target_accuracy", "90")
    accuracies = [float(a) for a in re.findall(r"^Epoch \d test end [\d:]+, Accuracy=([\d.]+)$", out, re.M)]
    assert len(accuracies) == 3 and accuracies[-1] >= 90.0
    assert f"Max Accuracy: {max(accuracies):.2f}%" in out
    # Step closures reported every device's loss at steps 0, 5 and 10 of each epoch.
    for d in range(DEVICES):
        assert len(re.findall(rf"^\| Training Device=xla:{d}/{d} Step=\d+ Loss=[\d.]+ ", out, re.M)) == 9
    # Forward, backward and update are one graph reused every step.
    uncached = int(re.search(r"^Counter: UncachedCompile\n  Value: (\d+)$", out, re.M).group(1))
    cached = int(re.search(r"^Counter: CachedCompile\n  Value: (\d+)$", out, re.M).group(1))
    assert uncached <= 8 and cached > 100


def test_the_mnist_program_on_fake_data_and_below_its_target():
    pytest.importorskip("torchvision")
    out = run_to_success("train_mp_mnist.py", "--fake_data", "--num_epochs", "1", "--target_accuracy", "100")
    assert "Max Accuracy: 100.00%" in out
    missed = run("train_mp_mnist.py", "--fake_data", "--num_epochs", "1", "--target_accuracy", "101")
    assert missed.returncode == 21 and "Accuracy 100.00 is below the target 101.0" in missed.stderr


def test_test_utils_prints_torch_xlas_progress_lines():
    out = io.StringIO()
    with redirect_stdout(out):
        test_utils.print_training_update(xm.xla_device(), 7, 0.25, 10.0, 12.5, epoch=2)
        test_utils.print_test_update(torch.device("xla", 0), 97.5, epoch=2)
    training, test = out.getvalue().splitlines()
    assert re.fullmatch(r"\| Training Device=xla:0/0 Epoch=2 Step=7 Loss=0\.25000 Rate=10\.00 GlobalRate=12\.50 "
                        r"Time=\d\d:\d\d:\d\d", training)
    assert re.fullmatch(r"\| Test Device=xla:0/0 Epoch=2 Accuracy=97\.50 Time=\d\d:\d\d:\d\d", test)
    assert test_utils.get_summary_writer(None) is None
    test_utils.write_to_summary(None, 0, {"ignored": 1.0}, write_xla_metrics=True)
    test_utils.close_summary_writer(None)
    if importlib.util.find_spec("tensorboard") is None:
        with pytest.raises(ImportError, match="needs the tensorboard package"):
            test_utils.get_summary_writer("/nonexistent/logs")


def test_test_utils_writes_scalars_and_the_metrics_counters():
    class Recorder:
        def __init__(self):
            self.scalars, self.closed = {}, False

        def add_scalar(self, name, value, step):
            self.scalars[name] = (value, step)

        def flush(self):
            pass

        def close(self):
            self.closed = True

    (torch.ones(2, device=xm.xla_device()) + 1).cpu()  # a step, so that there are counters
    writer = Recorder()
    test_utils.write_to_summary(writer, 3, {"Accuracy/test": 97.5}, write_xla_metrics=True)
    test_utils.close_summary_writer(writer)
    assert writer.scalars["Accuracy/test"] == (97.5, 3) and writer.closed
    counters = met.counter_names()
    assert counters and all(writer.scalars[name] == (met.counter_value(name), 3) for name in counters)
    fallbacks = sum(met.counter_value(name) for name in counters if name.startswith("aten::"))
    assert writer.scalars["aten_ops_sum"] == (fallbacks, 3)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
