"""collective_permute around a ring: replica i sends to i + 1 (the last to
0), so each replica receives its predecessor's ordinal, 100 times."""

import sys

import torch

import ordo.torch_xla.core.xla_model as xm
import ordo.torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(index):
    device = xm.xla_device()
    world = xm.xrt_world_size()
    ordinal = xm.get_ordinal()
    value = torch.tensor([ordinal] * 100, dtype=torch.int32, device=device)
    ring = [[i, (i + 1) % world] for i in range(world)]
    received = xm.collective_permute(value, ring).cpu().tolist()

    predecessor = (ordinal - 1) % world
    if received != [predecessor] * 100:
        print(f'[{ordinal}] xm.collective_permute: got {received[:4]}..., want {predecessor}s',
              file=sys.stderr)
        sys.exit(1)
    xm.master_print('collective_permute ok')


if __name__ == '__main__':
    xmp.spawn(_mp_fn, args=())
