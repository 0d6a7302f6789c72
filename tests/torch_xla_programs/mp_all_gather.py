"""all_gather of one value per replica: over the whole world every replica
holds 0, 1, ..., world - 1 in ordinal order; with the replicas split into
even and odd ordinals, each holds its own group's ordinals."""

import sys

import torch

import ordo.torch_xla.core.xla_model as xm
import ordo.torch_xla.distributed.xla_multiprocessing as xmp


def fail(what, index, got):
    print(f'[{index}] xm.all_gather {what}: got {got}', file=sys.stderr)
    sys.exit(1)


def _mp_fn(index):
    device = xm.xla_device()
    world = xm.xrt_world_size()
    mine = torch.tensor([float(index)]).to(device)

    gathered = xm.all_gather(mine, dim=0).cpu()
    if not gathered.allclose(torch.arange(world, dtype=torch.float)):
        fail('over the world', index, gathered)

    if world % 2 == 1:
        print(f'{world} replicas: no even/odd groups to gather in', file=sys.stderr)
        return
    groups = [list(range(0, world, 2)), list(range(1, world, 2))]
    gathered = xm.all_gather(mine, dim=0, groups=groups).cpu()
    if not gathered.allclose(torch.arange(index % 2, world, 2, dtype=torch.float)):
        fail('in even/odd groups', index, gathered)

    # Into a given output tensor, along the second dimension.
    row = torch.full((2, 1), float(index)).to(device)
    output = torch.zeros(2, world).to(device)
    xm.all_gather(row, dim=1, output=output)
    want = torch.arange(world, dtype=torch.float).expand(2, world)
    if not output.cpu().allclose(want):
        fail('into output along dim 1', index, output.cpu())
    xm.master_print('all_gather ok')


if __name__ == '__main__':
    xmp.spawn(_mp_fn, args=())
