"""torch.distributed on the 'xla' backend (torch_xla's
test_torch_distributed_*_xla_backend.py and test_ddp.py): every replica
joins the backend, runs torch.distributed's collectives on xla tensors,
in the world and in groups of new_group, and trains a model under
DistributedDataParallel that must end with the weights of the same model
trained on the CPU over the whole batch."""

import copy
import sys
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.optim as optim
from torch.nn.parallel import DistributedDataParallel as DDP

import ordo.torch_xla.core.xla_model as xm
import ordo.torch_xla.distributed.xla_backend  # noqa: F401 - registers the backend
import ordo.torch_xla.distributed.xla_multiprocessing as xmp


def fail(index, what, got, want):
    print(f'[{index}] {what}: {got} != {want}', file=sys.stderr)
    sys.exit(1)


def check(index, what, got, want):
    if not torch.equal(got.cpu(), want):
        fail(index, what, got.cpu(), want)


def collectives(index, device, world):
    xones = torch.ones((2, 3)).to(device)
    dist.all_reduce(xones)
    check(index, 'all_reduce', xones, torch.full((2, 3), float(world)))

    value = torch.tensor([index + 1.0, 10.0 * index]).to(device)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    check(index, 'all_reduce max', value, torch.tensor([float(world), 10.0 * (world - 1)]))

    gathered = [torch.zeros(2).to(device) for _ in range(world)]
    dist.all_gather(gathered, torch.tensor([index, -index], dtype=torch.float32).to(device))
    check(index, 'all_gather', torch.stack([g.cpu() for g in gathered]),
          torch.tensor([[r, -r] for r in range(world)], dtype=torch.float32))

    root = torch.full((3,), float(index)).to(device)
    dist.broadcast(root, src=world - 1)
    check(index, 'broadcast', root, torch.full((3,), world - 1.0))

    inputs = [torch.full((4,), float(index + r)).to(device) for r in range(world)]
    output = torch.zeros(4).to(device)
    dist.reduce_scatter(output, inputs)
    check(index, 'reduce_scatter', output, torch.full((4,), float(sum(i + index for i in range(world)))))

    pair = [torch.full((2,), float(index)).to(device), torch.ones(3).to(device)]
    warnings.filterwarnings('ignore', message='.*all_reduce_coalesced will be deprecated')
    dist.all_reduce_coalesced(pair)
    check(index, 'all_reduce_coalesced', torch.cat([t.cpu() for t in pair]),
          torch.tensor([float(sum(range(world)))] * 2 + [float(world)] * 3))

    whole = torch.zeros(world * 2).to(device)
    dist.all_gather_into_tensor(whole, torch.tensor([index, 10.0 * index]).to(device))
    check(index, 'all_gather_into_tensor', whole, torch.tensor([v for r in range(world) for v in (r, 10.0 * r)]))

    part = torch.zeros(2).to(device)
    dist.reduce_scatter_tensor(part, torch.arange(2.0 * world).to(device))
    check(index, 'reduce_scatter_tensor', part, torch.tensor([2.0 * index, 2.0 * index + 1]) * world)

    sent = torch.tensor([100.0 * index + r for r in range(world)]).to(device)
    received = torch.zeros(world).to(device)
    dist.all_to_all_single(received, sent)
    check(index, 'all_to_all_single', received, torch.tensor([100.0 * r + index for r in range(world)]))

    dist.barrier()


def groups(index, device, world):
    """Halves of the world, made by every replica in the same order."""
    half = world // 2
    halves = [list(range(half)), list(range(half, world))]
    made = [dist.new_group(ranks) for ranks in halves]
    mine = made[index // half]
    if dist.get_rank(mine) != index % half or dist.get_world_size(mine) != half:
        fail(index, 'rank in its half', (dist.get_rank(mine), dist.get_world_size(mine)), (index % half, half))
    value = torch.tensor([float(index)]).to(device)
    dist.all_reduce(value, group=mine)
    first = index // half * half
    check(index, 'all_reduce in a half', value, torch.tensor([float(sum(range(first, first + half)))]))
    root = torch.tensor([float(index)]).to(device)
    dist.broadcast(root, src=first + 1, group=mine)  # src is a global rank
    check(index, 'broadcast in a half', root, torch.tensor([first + 1.0]))
    dist.barrier(group=mine)


def ddp(index, device, world, bucket_view):
    torch.manual_seed(2022)  # every replica's model starts alike
    cpu_model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 4))
    model = DDP(copy.deepcopy(cpu_model).to(device), gradient_as_bucket_view=bucket_view)
    cpu_opt = optim.SGD(cpu_model.parameters(), lr=0.1, momentum=0.9)
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    local = 2
    for step in range(5):
        torch.manual_seed(100 + step)
        inputs, labels = torch.randn(local * world, 10), torch.randn(local * world, 4)
        for m, o, x, y in ((cpu_model, cpu_opt, inputs, labels),
                           (model, opt, inputs[index * local:(index + 1) * local].to(device),
                            labels[index * local:(index + 1) * local].to(device))):
            o.zero_grad()
            nn.functional.mse_loss(m(x), y).backward()
            o.step()
            xm.mark_step()
    for got, want in zip(model.module.parameters(), cpu_model.parameters()):
        if not torch.allclose(got.cpu(), want, rtol=1e-4, atol=1e-5):
            fail(index, f'DDP (gradient_as_bucket_view={bucket_view}) weights', got.cpu(), want)


def _mp_fn(index):
    device = xm.xla_device()
    world = xm.xrt_world_size()
    dist.init_process_group('xla', world_size=world, rank=xm.get_ordinal())
    if dist.get_rank() != xm.get_ordinal() or dist.get_world_size() != world or dist.get_backend() != 'xla':
        fail(index, 'rank, world size, backend', (dist.get_rank(), dist.get_world_size(), dist.get_backend()),
             (xm.get_ordinal(), world, 'xla'))
    collectives(index, device, world)
    groups(index, device, world)
    ddp(index, device, world, bucket_view=False)
    ddp(index, device, world, bucket_view=True)
    dist.destroy_process_group()
    xm.rendezvous('torch.distributed checked')
    xm.master_print('torch_distributed ok')


if __name__ == '__main__':
    xmp.spawn(_mp_fn, args=())
