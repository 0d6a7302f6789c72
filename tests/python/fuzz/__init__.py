"""ordo's differential fuzzer: seeded random programs over every op
(shapes with broadcasting, 0-d and size-0 dims, every dtype, NaN payloads,
infinities, integer extremes, collectives on 4 devices, calls that must
fail), each run with the default schedule, a random schedule and without
fusion, compared bitwise with each other and with numpy (reference.py says
how closely and where ordo's semantics differ from numpy's).

generate.py, gen_ops.py, gen_spmd.py: programs from a seed; apply.py: the
ordo calls; expect.py, reference.py: numpy's side; run.py: the modes and
checks; shrink.py: minimizing a failure; driver.py, __main__.py: running
many. tests/python/test_fuzz.py runs it in the test suite,
scripts/fuzz-soak.sh for as long as you like."""
