"""reduce_scatter of a random tensor along its middle dimension: each
replica's shard equals its slice of the same tensor all_reduced with the
same scale (1 / world); and a list of tensors scattered in one call."""

import sys

import torch

import ordo.torch_xla.core.xla_model as xm
import ordo.torch_xla.distributed.xla_multiprocessing as xmp

SHARD = 2


def _mp_fn(index):
    device = xm.xla_device()
    world = xm.xrt_world_size()
    scale = 1.0 / world
    torch.manual_seed(index)
    value = torch.rand(8, SHARD * world, 8).to(device)

    shard = xm.reduce_scatter(xm.REDUCE_SUM, value, scale, 1, world)
    whole = xm.all_reduce(xm.REDUCE_SUM, value, scale)
    xm.mark_step()

    mine = torch.arange(index * SHARD, (index + 1) * SHARD)
    want = whole.cpu().index_select(1, mine)
    if tuple(shard.shape) != (8, SHARD, 8) or not shard.cpu().allclose(want):
        print(f'[{index}] xm.reduce_scatter: shard {tuple(shard.shape)} differs from the all_reduce\'s slice',
              file=sys.stderr)
        sys.exit(1)

    # Two tensors at once: every replica's ones, summed, then sliced.
    pieces = [torch.ones(world * 3).to(device), torch.full((world, 2), 2.0).to(device)]
    shards = xm.reduce_scatter(xm.REDUCE_SUM, pieces, 1.0, 0, world)
    if (not shards[0].cpu().equal(torch.full((3,), float(world))) or
            not shards[1].cpu().equal(torch.full((1, 2), 2.0 * world))):
        print(f'[{index}] xm.reduce_scatter of a list: {[s.cpu() for s in shards]}', file=sys.stderr)
        sys.exit(1)

    xm.rendezvous('reduce_scatter checked')
    xm.master_print('reduce_scatter ok')


if __name__ == '__main__':
    xmp.spawn(_mp_fn, args=())
