"""A single-device torch_xla program, as torch_xla's README writes one: no
xmp.spawn, the model on xm.xla_device(), xm.optimizer_step(optimizer,
barrier=True) in the loop, pl.MpDeviceLoader, xm.master_print, xm.save.
Started with several devices in the process, it is still one replica: the
step reduces nothing and waits for no other device. It checks its weights
against the same steps on the CPU."""

import sys
import tempfile

import torch
import torch.nn as nn

import ordo.torch_xla.core.xla_model as xm
import ordo.torch_xla.distributed.parallel_loader as pl


def batches(count):
    generator = torch.Generator().manual_seed(1)
    return [(torch.randn(16, 8, generator=generator), torch.randint(0, 3, (16,), generator=generator))
            for _ in range(count)]


def train(model, device, loader, step):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for data, target in loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(data), target)
        loss.backward()
        step(optimizer)
    return loss


def main():
    torch.manual_seed(0)
    cpu_model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    device = xm.xla_device()
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)
    model.load_state_dict(cpu_model.state_dict())
    data = batches(6)
    train(cpu_model, 'cpu', data, lambda optimizer: optimizer.step())
    loss = train(model, device, pl.MpDeviceLoader(data, device),
                 lambda optimizer: xm.optimizer_step(optimizer, barrier=True))
    xm.master_print(f'world {xm.xrt_world_size()}, ordinal {xm.get_ordinal()}, master {xm.is_master_ordinal()}')
    for (name, want), got in zip(cpu_model.state_dict().items(), model.state_dict().values()):
        if not torch.allclose(got.cpu(), want, rtol=1e-5, atol=1e-6):
            print(f'{name} differs from the CPU', file=sys.stderr)
            sys.exit(1)
    with tempfile.NamedTemporaryFile() as file:
        xm.save(model.state_dict(), file.name)
        if torch.load(file.name).keys() != model.state_dict().keys():
            sys.exit(1)
    print(f'trained as on the CPU, loss {loss.item():.4f}')


if __name__ == '__main__':
    main()
