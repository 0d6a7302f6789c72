"""The ORDO_* variables from Python (src/core/config.h, the README's table):
a bad value fails the runtime's start (ordo.init or the first use) with a
ValueError naming the variable and its value, before anything runs; a good
one takes effect; a setting made in code wins over its variable, across
restarts; an unknown ORDO_* name is warned about, naming the closest. Each
case runs a fresh interpreter with only its ordo variables set."""

import json
import os
import subprocess
import sys
import textwrap

from package_dir import PYTHON_DIR

# (variable, value, the whole message); tests/config_test.cc has the rest.
BAD_VALUES = [
    ("ORDO_COLLECTIVE_TIMEOUT_SECONDS", "x",
     "ORDO_COLLECTIVE_TIMEOUT_SECONDS: 'x' is not a positive, finite number of seconds"),
    ("ORDO_COLLECTIVE_TIMEOUT_SECONDS", "-1",
     "ORDO_COLLECTIVE_TIMEOUT_SECONDS: '-1' is not a positive, finite number of seconds"),
    ("ORDO_COLLECTIVE_TIMEOUT_SECONDS", "nan",
     "ORDO_COLLECTIVE_TIMEOUT_SECONDS: 'nan' is not a positive, finite number of seconds"),
    ("ORDO_COLLECTIVE_TIMEOUT_SECONDS", "inf",
     "ORDO_COLLECTIVE_TIMEOUT_SECONDS: 'inf' is not a positive, finite number of seconds"),
    ("ORDO_COLLECTIVE_WARN_SECONDS", "soon",
     "ORDO_COLLECTIVE_WARN_SECONDS: 'soon' is not a positive, finite number of seconds"),
    ("ORDO_BACKEND", "nccl", "ORDO_BACKEND: 'nccl' is not one of in_process, mpi"),
    ("ORDO_MAX_STEPS_AHEAD", "x", "ORDO_MAX_STEPS_AHEAD: 'x' is not a whole number of steps from 0 to 1048576"),
    ("ORDO_MAX_STEPS_AHEAD", "-3", "ORDO_MAX_STEPS_AHEAD: '-3' is not a whole number of steps from 0 to 1048576"),
    ("ORDO_NUM_DEVICES", "four", "ORDO_NUM_DEVICES: 'four' is not a whole number"),
    ("ORDO_CPU_BIND", "sideways", "ORDO_CPU_BIND: 'sideways' is not one of cores, none"),
    ("ORDO_KERNEL_THREADS", "0", "ORDO_KERNEL_THREADS: '0' is not a whole number of threads >= 1"),
    ("ORDO_MPI_SHM", "maybe", "ORDO_MPI_SHM: 'maybe' is not a switch (1, on, true; or 0, off, false)"),
    ("ORDO_MESH_ADDRESS", "hosta", "ORDO_MESH_ADDRESS: 'hosta' is not an IPv4 address such as 10.0.0.2"),
    ("ORDO_LOG_LEVEL", "loud", "ORDO_LOG_LEVEL: 'loud' is not a log level (error, warning, info, debug or 0-3)"),
    ("ORDO_DEBUG", "yes", "ORDO_DEBUG: 'yes' is not a switch (1, on, true; or 0, off, false)"),
    ("ORDO_IR_DEBUG", "yes", "ORDO_IR_DEBUG: 'yes' is not a switch (1, on, true; or 0, off, false)"),
    ("ORDO_SAVE_GRAPHS_FMT", "svg", "ORDO_SAVE_GRAPHS_FMT: 'svg' is not one of text, dot"),
]


def run_python(code, **environment):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORDO_", "OMPI_"))}
    env.update(environment, PYTHONPATH=str(PYTHON_DIR))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=120)


# The case: a bad timeout was read when a collective first had to
# wait, hundreds of steps in; init and the steps before ran.
def test_a_bad_timeout_fails_init_before_anything_runs():
    done = run_python("""
        import ordo
        ordo.init(2)
        print("started")
    """, ORDO_COLLECTIVE_TIMEOUT_SECONDS="x")
    assert done.returncode != 0 and "started" not in done.stdout
    assert done.stderr.splitlines()[-1] == (
        "ValueError: ORDO_COLLECTIVE_TIMEOUT_SECONDS: 'x' is not a positive, finite number of seconds")


# The first use starts the runtime too: a bad bound failed at the first
# mark_step, after the program had traced.
def test_the_first_use_checks_every_variable():
    done = run_python("""
        import ordo
        x = ordo.ones([2])
        print("traced")
    """, ORDO_MAX_STEPS_AHEAD="x")
    assert done.returncode != 0 and "traced" not in done.stdout
    assert done.stderr.splitlines()[-1] == (
        "ValueError: ORDO_MAX_STEPS_AHEAD: 'x' is not a whole number of steps from 0 to 1048576")


def test_every_bad_value_fails_init_naming_it_and_starts_nothing():
    done = run_python(f"""
        import json, os, ordo
        said = []
        for name, value, _ in {BAD_VALUES!r}:
            os.environ[name] = value
            try:
                ordo.init(1)
                said.append("started")
            except ValueError as error:
                said.append(str(error))
            said.append(ordo._C.is_initialized())
            del os.environ[name]
        ordo.init(1)
        said.append(ordo.world_size())
        print(json.dumps(said))
    """)
    assert done.returncode == 0, done.stderr
    expected = [item for _, _, message in BAD_VALUES for item in (message, False)] + [1]
    assert json.loads(done.stdout.splitlines()[-1]) == expected


SETTINGS = """
    import json, ordo
    def settings():
        return [ordo.world_size(), ordo.max_steps_ahead(), list(ordo._C.collective_timeouts()), ordo.log_level(),
                ordo._C.ir_debug_enabled()]
    ordo.init()
    from_environment = settings()
    ordo.set_max_steps_ahead(1)
    ordo.set_collective_timeout(9.0, warn_seconds=3.0)
    ordo.set_log_level("error")
    ordo._C.set_ir_debug_enabled(False)
    ordo.shutdown()
    ordo.init(2)
    print(json.dumps([from_environment, settings()]))
"""


def test_good_values_take_effect_and_settings_in_code_win():
    done = run_python(SETTINGS, ORDO_NUM_DEVICES="3", ORDO_MAX_STEPS_AHEAD="5", ORDO_COLLECTIVE_TIMEOUT_SECONDS="7.5",
                      ORDO_COLLECTIVE_WARN_SECONDS="2", ORDO_LOG_LEVEL="info", ORDO_IR_DEBUG="1",
                      ORDO_BACKEND="in_process")
    assert done.returncode == 0, done.stderr
    from_environment, in_code = json.loads(done.stdout.splitlines()[-1])
    assert from_environment == [3, 5, [2.0, 7.5], "info", True]
    assert in_code == [2, 1, [3.0, 9.0], "error", False]


def test_the_defaults():
    done = run_python(SETTINGS)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])[0] == [4, 2, [30.0, 300.0], "warning", False]


def test_an_unknown_name_is_warned_about_naming_the_closest():
    done = run_python("""
        import ordo
        ordo.init(1)
        ordo.shutdown()
        ordo.init(1)
        print(ordo.world_size())
    """, ORDO_COLECTIVE_TIMEOUT_SECONDS="10", ORDO_TEST_ANYTHING="1")
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith("ordo: ")] == [
        "ordo: ORDO_COLECTIVE_TIMEOUT_SECONDS is not a variable ordo reads; did you mean "
        "ORDO_COLLECTIVE_TIMEOUT_SECONDS? (the README's table lists them)"]
