"""xf.distributed_mm: every replica holds a column shard of one weight
(drawn alike on the CPU from the same seed) and an input of its own (drawn
on its device, so it differs between replicas); the sharded product, in
two column blocks, equals the whole weight times the replica's input."""

import sys

import torch

import ordo.torch_xla as torch_xla
import ordo.torch_xla.core.functions as xf
import ordo.torch_xla.core.xla_model as xm
import ordo.torch_xla.distributed.xla_multiprocessing as xmp

ROWS, COLUMNS, SHARD = 3, 4, 2


def _mp_fn(index):
    device = xm.xla_device()
    world = xm.xrt_world_size()
    torch_xla._XLAC._xla_set_use_full_mat_mul_precision(use_full_mat_mul_precision=True)
    torch.manual_seed(11)
    xm.set_rng_state(11)

    width = SHARD * world
    weight = torch.randn(ROWS, width).to(device).requires_grad_()
    shard = torch.narrow(weight, 1, index * SHARD, SHARD)
    x = torch.randn(width, COLUMNS, device=device)

    whole = (weight @ x).cpu()
    sharded = xf.distributed_mm(shard, x, split=2).cpu()
    if not whole.allclose(sharded, rtol=1e-4, atol=1e-4):
        print(f'[{index}] xf.distributed_mm differs from the whole product:\n{whole}\n{sharded}', file=sys.stderr)
        sys.exit(1)
    xm.master_print('distributed_mm ok')


if __name__ == '__main__':
    xmp.spawn(_mp_fn, nprocs=None)
