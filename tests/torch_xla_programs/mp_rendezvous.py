"""rendezvous with payloads within two halves of the world (replicas=): each
replica gets its half's payloads in the order of the replicas list, each
naming the ordinal that sent it; then every replica meets every other."""

import re
import sys

import ordo.torch_xla.core.xla_model as xm
import ordo.torch_xla.distributed.xla_multiprocessing as xmp


def my_half(index):
    world = xm.xrt_world_size()
    half = world // 2
    if half == 0:
        return list(range(world)), 0
    return (list(range(half)), 0) if index < half else (list(range(half, world)), 1)


def _mp_fn(index):
    ordinal = xm.get_ordinal()
    replicas, half = my_half(index)
    # One write per line: the replicas are threads sharing stdout.
    print(f'replica {ordinal} waits for its half\n', end='', flush=True)
    payloads = xm.rendezvous(f'halves.{half}', f'ordinal={ordinal}'.encode(), replicas=replicas)
    print(f'replica {ordinal} met its half\n', end='', flush=True)
    senders = []
    for payload in payloads:
        found = re.fullmatch(r'ordinal=(\d+)', payload.decode())
        if not found:
            print(f'[{ordinal}] unexpected payload {payload!r}', file=sys.stderr)
            sys.exit(1)
        senders.append(int(found.group(1)))
    if senders != replicas:
        print(f'[{ordinal}] payloads came from {senders}, want {replicas}', file=sys.stderr)
        sys.exit(1)
    xm.rendezvous('everyone')
    xm.master_print('rendezvous ok')


if __name__ == '__main__':
    xmp.spawn(_mp_fn, args=())
