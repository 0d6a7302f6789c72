"""torch_xla programs across processes: torch tensors on the xla device,
torch_xla's collectives and a data-parallel torch.nn training, on the world
of every process's devices (2 x 2 under mpirun; 1 x 4 in one process as a
control). Each replica checks its own results against values computed from
its global ordinal; a process exits non-zero naming the first failure.

    scripts/mpirun.sh -np 2 -x ORDO_NUM_DEVICES=2 /usr/bin/python3 tests/mpi/python/torch_semantics.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "python"))

import torch  # noqa: E402

import ordo  # noqa: E402
import ordo.torch_xla.core.xla_model as xm  # noqa: E402
import ordo.torch_xla.distributed.xla_multiprocessing as xmp  # noqa: E402

failures = []


def check(what, got, want):
    if got != want:
        failures.append(f"ordinal {xm.get_ordinal()}: {what}: got {got}, want {want}")


def collectives(ordinal, world):
    d = xm.xla_device()
    x = torch.arange(world, dtype=torch.float32, device=d) + 10 * ordinal
    total = xm.all_reduce(xm.REDUCE_SUM, x)
    gathered = xm.all_gather(x.view(1, -1), dim=0)
    scattered = xm.reduce_scatter(xm.REDUCE_SUM, x, 1.0, 0, world)
    swapped = xm.all_to_all(x, 0, 0, world)
    shifted = xm.collective_permute(x, [[i, (i + 1) % world] for i in range(world)])
    a, b = torch.ones(2, device=d) * ordinal, torch.full((1,), float(ordinal), device=d)
    xm.all_reduce(xm.REDUCE_MAX, [a, b])
    xm.mark_step()
    rows = [[10 * j + k for k in range(world)] for j in range(world)]
    check("all_reduce", total.cpu().tolist(), [sum(r[k] for r in rows) for k in range(world)])
    check("all_gather", gathered.cpu().tolist(), rows)
    check("reduce_scatter", scattered.cpu().tolist(), [sum(r[ordinal] for r in rows)])
    check("all_to_all", swapped.cpu().tolist(), [rows[j][ordinal] for j in range(world)])
    check("collective_permute", shifted.cpu().tolist(), rows[(ordinal - 1) % world])
    check("all_reduce in place", (a.cpu().tolist(), b.cpu().tolist()), ([world - 1.0] * 2, [world - 1.0]))
    check("rendezvous", xm.rendezvous("torch", str(ordinal).encode()), [str(i).encode() for i in range(world)])
    check("mesh_reduce", xm.mesh_reduce("torch", ordinal, sum), sum(range(world)))


def training(ordinal, world):
    d = xm.xla_device()
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape))
    model = model.to(d)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(ordinal)
    for _ in range(3):
        x, y = torch.randn(8, 6, generator=g).to(d), torch.randint(0, 3, (8,), generator=g).to(d)
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        xm.optimizer_step(optimizer)
        xm.mark_step()
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    every = xm.all_gather(flat.reshape(1, -1), dim=0).cpu()
    check("same weights on every replica", bool((every.view(torch.int32) == every[:1].view(torch.int32)).all()), True)


def replica(ordinal):
    world = xm.xrt_world_size()
    check("device", xm.xla_device().type, "xla")
    collectives(ordinal, world)
    training(ordinal, world)


def main():
    xmp.spawn(replica)
    if failures:
        sys.exit("torch semantics failed:\n" + "\n".join(failures))
    print(f"process of ordinal {ordo._C.get_ordinal(0)}: torch_xla semantics held on {ordo._C.num_devices()} devices")


if __name__ == "__main__":
    main()
