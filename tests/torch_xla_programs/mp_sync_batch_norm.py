"""xf.SyncBatchNorm on each replica's share of a batch against one CPU
BatchNorm{1,2,3}d on the whole batch, after a step of SGD on sum(output)
(xm.optimizer_step averages the gradients, so the CPU loss is divided by
the world size): the replica's rows of the output, the weight and bias, and
the running mean and variance agree, in 1d without and with channels, 2d
and 3d."""

import sys

import torch

import ordo.torch_xla.core.functions as xf
import ordo.torch_xla.core.xla_model as xm
import ordo.torch_xla.distributed.xla_multiprocessing as xmp

# float32 sums taken in another order (per replica, then all_reduced).
ATOL = 1e-4
RTOL = 1e-3
LR = 1e-3


def one_step(model, batch):
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    output = model(batch)
    if batch.device.type == 'xla':
        output.sum().backward()
        xm.optimizer_step(optimizer)
        return output
    (output.sum() / xm.xrt_world_size()).backward()
    optimizer.step()
    rows = batch.shape[0] // xm.xrt_world_size()
    return output.split(rows, dim=0)[xm.get_ordinal()]


def close(a, b):
    return a.allclose(b, rtol=RTOL, atol=ATOL)


def compare(name, index, shape, cpu_class):
    """shape: one replica's share of the batch (its rows first)."""
    torch.manual_seed(1)
    rows, features = shape[0], shape[1]
    whole = torch.rand((xm.xrt_world_size() * rows,) + shape[1:])
    device = xm.xla_device()
    synced = xf.SyncBatchNorm(features).to(device)
    got = one_step(synced, whole[rows * index:rows * (index + 1)].to(device)).cpu()
    reference = cpu_class(features)
    want = one_step(reference, whole).detach()
    synced = synced.cpu()
    for what in ('weight', 'bias', 'running_mean', 'running_var'):
        if not close(getattr(synced, what).detach(), getattr(reference, what).detach()):
            print(f'[{index}] {name}: the {what} differs from {cpu_class.__name__} on the CPU', file=sys.stderr)
            sys.exit(1)
    if not close(got, want):
        print(f'[{index}] {name}: the output differs from {cpu_class.__name__} on the CPU by '
              f'{(got - want).abs().max().item()}', file=sys.stderr)
        sys.exit(1)
    xm.rendezvous(name)
    xm.master_print(f'{name} ok')


def _mp_fn(index):
    compare('1d without channels', index, (16, 24), torch.nn.BatchNorm1d)
    compare('1d with channels', index, (8, 6, 20), torch.nn.BatchNorm1d)
    compare('2d', index, (4, 5, 12, 12), torch.nn.BatchNorm2d)
    compare('3d', index, (2, 4, 4, 6, 6), torch.nn.BatchNorm3d)


if __name__ == '__main__':
    xmp.spawn(_mp_fn, args=())
