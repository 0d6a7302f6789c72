"""all_reduce in place on a list: two tensors (ones and twos) summed over
the replicas in one call hold world and 2 * world; then a scaled sum and a
max over the replicas' ordinals, each giving a new tensor."""

import sys

import torch

import ordo.torch_xla.core.xla_model as xm
import ordo.torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(index):
    device = xm.xla_device()
    world = xm.xrt_world_size()
    if world < 2:
        print(f'{device}: a single replica has nothing to replicate with', file=sys.stderr)
        return
    ones = torch.ones(2, 3)
    twos = ones + 1.0
    xones, xtwos = ones.to(device), twos.to(device)
    xm.all_reduce(xm.REDUCE_SUM, [xones, xtwos])
    if not xones.cpu().allclose(ones * world) or not xtwos.cpu().allclose(twos * world):
        print(f'[{index}] xm.all_reduce of a list: {xones.cpu()} {xtwos.cpu()}', file=sys.stderr)
        sys.exit(1)

    ordinal = torch.tensor([float(index)], device=device)
    mean = xm.all_reduce(xm.REDUCE_SUM, ordinal, scale=1.0 / world).item()
    top = xm.all_reduce(xm.REDUCE_MAX, ordinal).item()
    if abs(mean - (world - 1) / 2) > 1e-6 or top != world - 1:
        print(f'[{index}] xm.all_reduce: mean ordinal {mean}, max {top}', file=sys.stderr)
        sys.exit(1)
    xm.master_print('replication ok')


if __name__ == '__main__':
    xmp.spawn(_mp_fn, args=())
