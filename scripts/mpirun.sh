#!/usr/bin/env bash
# Open MPI's mpirun with the launch options ordo needs everywhere it runs:
# the one place they live (tests, benchmarks and users call this).
#
#   scripts/mpirun.sh -np 4 -x ORDO_NUM_DEVICES=2 python3 train.py
#
# - --oversubscribe: more processes than cores (2-core machines, CI).
# - --bind-to none: Open MPI binds each process to one core by default when
#   np <= 2, which would put all of a process's device workers on that core;
#   ordo places its workers itself.
# - --allow-run-as-root when root (containers run as root).
# - the shared-memory single-copy mechanism off when process_vm_readv (CMA)
#   is refused, as under Docker's default seccomp: Open MPI 4.1 detects a
#   strict yama ptrace scope by itself but not seccomp, and then fails with
#   "Read -1, expected N, errno = 1". An OMPI_MCA_btl_vader_single_copy_mechanism
#   already set in the environment is left as it is.
# - hwloc's GL component off (HWLOC_COMPONENTS=-gl, unless already set):
#   mpirun and every rank probe X displays with it, and a display's TCP
#   fallback looks up "localhost". In a root without /etc/hosts (a fresh
#   debootstrap root) that lookup goes to DNS, and MPI_Init waited 5.3 s
#   when a query was lost; ordo has no use for GPU topology.
# The rest of the arguments go to mpirun unchanged.
set -euo pipefail

# Whether this process may read a child's memory with process_vm_readv,
# which is what Open MPI's single copy (CMA) does between ranks.
cma_usable() {
  /usr/bin/python3 - <<'PY' 2>/dev/null
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
source = ctypes.create_string_buffer(b"ordo-cma", 8)
read_end, write_end = os.pipe()
child = os.fork()
if child == 0:  # the same addresses as the parent; waits until it has read
    os.close(write_end)
    os.read(read_end, 1)
    os._exit(0)
target = ctypes.create_string_buffer(8)
local = IoVec(ctypes.addressof(target), 8)
remote = IoVec(ctypes.addressof(source), 8)
copied = libc.process_vm_readv(child, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
os.close(write_end)
os.waitpid(child, 0)
sys.exit(0 if copied == 8 and target.raw == b"ordo-cma" else 1)
PY
}

if ! command -v mpirun >/dev/null; then
  echo "scripts/mpirun.sh: no mpirun (apt-get install libopenmpi-dev openmpi-bin)" >&2
  exit 127
fi
export HWLOC_COMPONENTS="${HWLOC_COMPONENTS:--gl}"
options=(--oversubscribe --bind-to none)
[ "$(id -u)" -eq 0 ] && options+=(--allow-run-as-root)
if [ -z "${OMPI_MCA_btl_vader_single_copy_mechanism:-}" ] && ! cma_usable; then
  options+=(--mca btl_vader_single_copy_mechanism none)
fi
exec mpirun "${options[@]}" "$@"
