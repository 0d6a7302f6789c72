"""The main job, as a torch_xla user writes it: an MLP of torch.nn learns the
handwritten digits on 4 xla devices with torch.optim, xmp.spawn,
pl.MpDeviceLoader and xm.optimizer_step; only the imports name ordo.

    scripts/demo.sh                                  # 4 in-process devices
    scripts/demo.sh -np 2 -x ORDO_NUM_DEVICES=2      # 2 processes x 2 devices

The digits ship with Debian's python3-sklearn (1797 images of 8 x 8 pixels):
nothing is downloaded. Each step is one graph per device (forward, loss,
backward, the gradients' all_reduce and the optimizer's update), compiled at
the first steps and reused from the compile cache after them. Then every
device's weights are compared bitwise with every other's, every collective
runs once against the value torch_xla gives, and a timeline of a few steps
is drawn (build/demo-timeline.png, its Chrome trace beside it)."""

import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import ordo
import ordo.torch_xla.core.xla_model as xm
import ordo.torch_xla.debug.metrics as met
import ordo.torch_xla.distributed.parallel_loader as pl
import ordo.torch_xla.distributed.xla_multiprocessing as xmp

DEVICES = 4
EPOCHS = 12
BATCH = 32  # per device: a global batch of 128
TIMELINE_STEPS = 4
TIMELINE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "demo-timeline")


class Mlp(nn.Module):
    def __init__(self, hidden=128):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                    nn.Linear(hidden, 10))

    def forward(self, x):
        return F.log_softmax(self.layers(x), dim=1)


def digits():
    """(train, held-out) TensorDatasets: 1437 and 360 images, pixels in [0, 1]."""
    from sklearn.datasets import load_digits
    data = load_digits()
    order = np.random.default_rng(0).permutation(len(data.target))
    x = torch.tensor(data.data[order] / 16.0, dtype=torch.float32)
    y = torch.tensor(data.target[order], dtype=torch.int64)
    return (torch.utils.data.TensorDataset(x[:1437], y[:1437]), torch.utils.data.TensorDataset(x[1437:], y[1437:]))


def loader(dataset, shuffle):
    sampler = torch.utils.data.distributed.DistributedSampler(
        dataset, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal(), shuffle=shuffle, seed=1)
    return torch.utils.data.DataLoader(dataset, batch_size=BATCH, sampler=sampler, drop_last=True), sampler


def train(model, train_set, epochs=EPOCHS, steps=None):
    device = xm.xla_device()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    train_loader, sampler = loader(train_set, shuffle=True)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        tracker = xm.RateTracker()
        losses = []
        for step, (data, target) in enumerate(pl.MpDeviceLoader(train_loader, device)):
            if steps is not None and step == steps:
                break
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target)
            loss.backward()
            xm.optimizer_step(optimizer)
            tracker.add(BATCH)
            losses.append(loss.detach())
        if epochs > 1:
            mean_loss = xm.mesh_reduce("loss", torch.stack(losses).mean().item(), np.mean)
            xm.master_print(f"  epoch {epoch + 1:>2}/{epochs}  loss {mean_loss:.3f}  "
                            f"{tracker.global_rate() * xm.xrt_world_size():.0f} images/s", flush=True)


def held_out_accuracy(model, test_set):
    model.eval()
    device = xm.xla_device()
    test_loader, _ = loader(test_set, shuffle=False)
    correct = seen = 0
    with torch.no_grad():
        for data, target in pl.MpDeviceLoader(test_loader, device):
            correct += model(data).argmax(1).eq(target).sum().item()
            seen += len(target)
    return xm.mesh_reduce("accuracy", (correct, seen), lambda pairs: sum(c for c, _ in pairs) / sum(s for _, s in pairs))


def same_weights(model):
    """Whether every device holds bitwise the weights of every other."""
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    every = xm.all_gather(flat.reshape(1, -1), dim=0).cpu()
    return bool((every.view(torch.int32) == every[:1].view(torch.int32)).all())


def collective_tour(index):
    """Every collective once: this device's result against the value torch_xla gives."""
    world, device = xm.xrt_world_size(), xm.xla_device()
    me = torch.full((2,), float(index), device=device)
    got = {
        "all_reduce(sum)": xm.all_reduce(xm.REDUCE_SUM, me),
        "all_gather": xm.all_gather(me, dim=0),
        "reduce_scatter(sum)": xm.reduce_scatter(xm.REDUCE_SUM, torch.full((world,), float(index), device=device),
                                                 1.0, 0, world),
        "all_to_all": xm.all_to_all(torch.arange(world, dtype=torch.float32, device=device) + 10 * index, 0, 0, world),
        "collective_permute": xm.collective_permute(me, [[i, (i + 1) % world] for i in range(world)]),
    }
    xm.mark_step()
    total = float(sum(range(world)))
    expected = {
        "all_reduce(sum)": [total] * 2,
        "all_gather": [float(d) for d in range(world) for _ in range(2)],
        "reduce_scatter(sum)": [total],
        "all_to_all": [float(10 * d + index) for d in range(world)],
        "collective_permute": [float((index - 1) % world)] * 2,
    }
    return [(name, got[name].cpu().tolist(), expected[name]) for name in got]


def print_tour(every):
    ok = True
    xm.master_print("\n2. every collective, each device's result against torch_xla's")
    for row, (name, _, _) in enumerate(every[0]):
        cells = []
        for device, lines in enumerate(every):
            _, got, want = lines[row]
            ok = ok and got == want
            cells.append(f"{device}:{'ok' if got == want else 'MISMATCH ' + str(got)}")
        xm.master_print(f"  {name:<20} {' '.join(cells)}   device 0 got {every[0][row][1]}")
    return ok


def _mp_fn(index, model_wrapper, data, results):
    torch.manual_seed(1)
    model = model_wrapper.to(xm.xla_device())  # every replica starts from the same weights
    xm.master_print("\n1. data parallel: SGD with momentum, the gradients averaged by one all_reduce per step")
    train(model, data[0])
    accuracy = held_out_accuracy(model, data[1])
    same = same_weights(model)
    xm.master_print(f"  held-out accuracy {accuracy:.3f} (target 0.95); every device holds the same weights: "
                    f"{'yes' if same else 'NO'}")
    every = xm.mesh_reduce("tour", collective_tour(index), lambda lines: lines)
    tour_ok = print_tour(every)
    results[index] = accuracy >= 0.95 and same and tour_ok


def _timeline_fn(index, model_wrapper, data):
    train(model_wrapper.to(xm.xla_device()), data[0], epochs=1, steps=TIMELINE_STEPS)


def short_metrics_report():
    keep = ("CompileTime", "ExecuteTime", "CollectiveWaitTime", "MarkStep", "CachedCompile", "UncachedCompile",
            "AllReduce", "AllGather")
    return "metrics (met.metrics_report(), short):\n" + met.short_metrics_report(
        counter_names=[k for k in keep if not k.endswith("Time")], metric_names=[k for k in keep if k.endswith("Time")]
    ).rstrip()


def main():
    world = ordo.world_size()
    if world != DEVICES:
        sys.exit(f"ordo demo: needs a world of {DEVICES} devices, this one has {world}: run it without "
                 f"ORDO_NUM_DEVICES, or as scripts/demo.sh -np 2 -x ORDO_NUM_DEVICES=2")
    data = digits()
    torch.manual_seed(0)
    model_wrapper = xmp.MpModelWrapper(Mlp())
    master = ordo._C.get_ordinal(0) == 0  # the process of ordinal 0 prints
    if master:
        print(f"ordo demo (torch_xla API): an MLP (64-128-128-10) of torch.nn learns sklearn's handwritten digits "
              f"on {world} xla devices ({len(data[0])} training images, {len(data[1])} held out), global batch "
              f"{BATCH * world}")
    results = {}
    xmp.spawn(_mp_fn, args=(model_wrapper, data, results))
    if master:
        print(f"\n3. graphs: {met.counter_value('UncachedCompile')} compiled, {met.counter_value('CachedCompile')} "
              "reused from the compile cache (this process)")
        print(short_metrics_report())
    os.makedirs(os.path.dirname(TIMELINE), exist_ok=True)
    ordo.start_trace(TIMELINE + ".json")
    xmp.spawn(_timeline_fn, args=(model_wrapper, data))
    ordo.stop_trace()
    if master:
        png = ordo.plot_timeline(TIMELINE + ".json", TIMELINE + ".png",
                                 title=f"{TIMELINE_STEPS} data-parallel steps on {world} devices")
        print(f"\n4. a timeline of {TIMELINE_STEPS} training steps: {os.path.relpath(png)} "
              f"(Chrome trace: {os.path.relpath(TIMELINE + '.json')}, opens in ui.perfetto.dev)")
    ok = all(results.values()) and len(results) == len(ordo.devices())
    if master:
        print(f"everything matched: {'yes' if ok else 'NO'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
