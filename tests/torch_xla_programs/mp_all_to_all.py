"""all_to_all of int32 slots: each replica sends SLOTS copies of its ordinal
to every replica, and receives, in ordinal order, SLOTS copies of each
sender's ordinal."""

import sys

import torch

import ordo.torch_xla.core.xla_model as xm
import ordo.torch_xla.distributed.xla_multiprocessing as xmp

SLOTS = 4


def _mp_fn(index):
    device = xm.xla_device()
    world = xm.xrt_world_size()
    ordinal = xm.get_ordinal()
    sent = torch.tensor([ordinal] * (SLOTS * world), dtype=torch.int32, device=device)
    received = xm.all_to_all(sent, split_dimension=0, concat_dimension=0, split_count=world)

    got = received.cpu().tolist()
    want = [sender for sender in range(world) for _ in range(SLOTS)]
    if received.dtype != torch.int32 or got != want:
        print(f'[{ordinal}] xm.all_to_all: got {got} ({received.dtype}), want {want}', file=sys.stderr)
        sys.exit(1)
    xm.master_print('all_to_all ok')


if __name__ == '__main__':
    xmp.spawn(_mp_fn, args=())
