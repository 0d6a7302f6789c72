"""mesh_reduce of host values: a Python float summed over the replicas, a
CPU tensor stacked and summed, an xla tensor's value (taken to the CPU)
averaged with numpy's mean, as MNIST's accuracy is."""

import sys

import numpy as np
import torch

import ordo.torch_xla.core.xla_model as xm
import ordo.torch_xla.distributed.xla_multiprocessing as xmp


def check(what, ok):
    if not ok:
        print(f'[{xm.get_ordinal()}] xm.mesh_reduce of {what} gave a wrong value', file=sys.stderr)
        sys.exit(1)


def _mp_fn(index):
    world = xm.xrt_world_size()
    total = xm.mesh_reduce('a float', 1.25, sum)
    check('a float', total == 1.25 * world)

    table = torch.tensor([[1, 2], [3, 4], [5, 6]], dtype=torch.float32)
    summed = xm.mesh_reduce('a tensor', table, lambda values: torch.stack(values).sum(dim=0))
    check('a tensor', summed.allclose(table * world))

    mine = torch.tensor(float(index), device=xm.xla_device())
    mean = xm.mesh_reduce('an xla tensor', mine, np.mean)
    check('an xla tensor', abs(float(mean) - (world - 1) / 2) < 1e-6)
    xm.master_print('mesh_reduce ok')


if __name__ == '__main__':
    xmp.spawn(_mp_fn, args=())
