"""xm.save of a dict of xla tensors (plain, derived, in a list and a tuple)
by the master to one file: every replica then loads it as CPU tensors, the
derived entries agree with their sources, the master's load equals what it
saved, and all replicas loaded the same values."""

import io
import os
import sys
import tempfile

import torch

import ordo.torch_xla.core.xla_model as xm
import ordo.torch_xla.distributed.xla_multiprocessing as xmp


def state_dict(device):
    a, b, c = (torch.randn(3, 4, device=device) for _ in range(3))
    return {'a': a, 'b': b, 'c': c, 'a+b': a + b, 'b*c': b * c, 'a,b,c': [a, b, c], 'b,c,a-b': (b, c, a - b)}


def tensors_of(state):
    for key, value in sorted(state.items()):
        for i, tensor in enumerate(value if isinstance(value, (list, tuple)) else [value]):
            yield f'{key}[{i}]', tensor


def fail(what):
    print(f'[{xm.get_ordinal()}] xm.save: {what}', file=sys.stderr)
    sys.exit(1)


def _mp_fn(index, path):
    saved = state_dict(xm.xla_device())
    xm.save(saved, path)
    loaded = torch.load(path)
    if any(t.device.type != 'cpu' for _, t in tensors_of(loaded)):
        fail('a loaded tensor is not on the CPU')
    if type(loaded['a,b,c']) is not list or type(loaded['b,c,a-b']) is not tuple:
        fail('the list and the tuple did not come back as such')
    if not loaded['a+b'].allclose(loaded['a'] + loaded['b']) or not loaded['b*c'].allclose(
            loaded['b'] * loaded['c']):
        fail('a derived entry disagrees with its sources')
    if xm.is_master_ordinal() and not all(
            t.allclose(s.cpu()) for (_, t), (_, s) in zip(tensors_of(loaded), tensors_of(saved))):
        fail('the master loaded other values than it saved')

    buffer = io.BytesIO()
    torch.save(loaded, buffer)
    everyone = xm.rendezvous('loaded', buffer.getvalue())
    if xm.is_master_ordinal():
        os.remove(path)
    mine = dict(tensors_of(loaded))
    for ordinal, payload in enumerate(everyone):
        for key, tensor in tensors_of(torch.load(io.BytesIO(payload))):
            if not tensor.equal(mine[key]):
                fail(f'ordinal {ordinal} loaded another {key}')
    xm.master_print('save ok')


if __name__ == '__main__':
    # Under mpirun every process must name the same file: the command line's.
    if len(sys.argv) > 1:
        path = sys.argv[1]
    else:
        fd, path = tempfile.mkstemp()
        os.close(fd)
    xmp.spawn(_mp_fn, args=(path,))
