"""The main job: an MLP learns the handwritten digits on 4 devices, first data
parallel, then with ZeRO-1, then every collective once; last, a timeline of a
few training steps (build/demo-timeline.png, and its Chrome trace beside it).

    scripts/demo.sh                                  # 4 in-process devices
    scripts/demo.sh -np 2 -x ORDO_NUM_DEVICES=2      # 2 processes x 2 devices

The digits ship with Debian's python3-sklearn (1797 images of 8 x 8 pixels):
nothing is downloaded. Every step is one graph per device (forward, loss,
backward, the gradients' collectives and the optimizer's update), compiled at
the first step and reused from the compile cache after it. The master ordinal
prints; every other device sends it what it has to say."""

import os
import sys

import numpy as np

import ordo

DEVICES = 4
EPOCHS = 12
TIMELINE_STEPS = 4
TIMELINE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "demo-timeline")
GLOBAL_BATCH = 128
HIDDEN = 128


def digits():
    """(train x, train y, held-out x, held-out y): 1437 and 360 images, pixels in [0, 1]."""
    from sklearn.datasets import load_digits
    data = load_digits()
    order = np.random.default_rng(0).permutation(len(data.target))
    x = (data.data[order] / 16.0).astype(np.float32)
    y = data.target[order].astype(np.int64)
    return x[:1437], y[:1437], x[1437:], y[1437:]


def mlp():
    ordo.manual_seed(0)
    return ordo.nn.Sequential(ordo.nn.Linear(64, HIDDEN), ordo.nn.ReLU(), ordo.nn.Linear(HIDDEN, HIDDEN),
                              ordo.nn.ReLU(), ordo.nn.Linear(HIDDEN, 10))


def shard(array, index, count):
    """This device's slice of a batch."""
    share = len(array) // count
    return array[index * share:(index + 1) * share]


def correct(logits, y):
    return (logits.argmax(1) == y).astype(np.int64).sum()


def progress(master, epoch, steps):
    if not master:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=steps, desc=f"  epoch {epoch + 1:>2}/{EPOCHS}", ncols=86, leave=True, file=sys.stdout)


def fit(index, net, optimizer, step_fn, data, epochs=EPOCHS, steps=None):
    """Trains for epochs (of `steps` steps, default all); returns the held-out accuracy (over every device's
    share)."""
    train_x, train_y, test_x, test_y = data
    world = ordo.world_size()
    master = ordo.is_master_ordinal(local=False) and epochs > 1
    steps = steps or len(train_x) // GLOBAL_BATCH
    rng = np.random.default_rng(1)  # the same order on every device
    for epoch in range(epochs):
        order = rng.permutation(len(train_x))
        bar = progress(master, epoch, steps)
        loss_sum = hits = 0.0
        for step in range(steps):
            rows = order[step * GLOBAL_BATCH:(step + 1) * GLOBAL_BATCH]
            x = ordo.tensor(shard(train_x[rows], index, world))
            y = ordo.tensor(shard(train_y[rows], index, world))
            optimizer.zero_grad()
            logits = net(x)
            loss = ordo.nn.functional.cross_entropy(logits, y)
            loss.backward()
            step_fn(optimizer)
            # The epoch's figures over every device, added up in the same graph.
            totals = ordo.all_reduce(ordo.REDUCE_SUM, [loss.detach(), correct(logits, y).astype(np.float32)])
            ordo.mark_step()
            loss_sum += float(totals[0]) / world
            hits += float(totals[1])
            if bar:
                bar.update(1)
                bar.set_postfix_str(f"loss {loss_sum / (step + 1):.3f}  accuracy {hits / ((step + 1) * GLOBAL_BATCH):.3f}")
        if bar:
            bar.close()
    with ordo.no_grad():
        x, y = ordo.tensor(shard(test_x, index, world)), ordo.tensor(shard(test_y, index, world))
        seen = ordo.all_reduce(ordo.REDUCE_SUM, correct(net(x), y))
        ordo.mark_step()
    return int(seen) / (len(test_x) // world * world)


def same_weights(net):
    """Whether every device holds bitwise device 0's weights (checked on each)."""
    flat = ordo.cat([p.detach().reshape(-1) for p in net.parameters()])
    every = ordo.all_gather(flat.reshape(1, -1), 0)
    ordo.mark_step()
    rows = every.numpy()
    return bool((rows.view(np.uint32) == rows[:1].view(np.uint32)).all())


def train_both(index, data):
    master = ordo.is_master_ordinal(local=False)
    results = {}
    for title, make in (
            ("1. data parallel: gradients averaged by one all_reduce per step, SGD with momentum",
             lambda net: (ordo.optim.SGD(net.parameters(), lr=0.1, momentum=0.9), ordo.optimizer_step)),
            ("2. ZeRO-1: gradients reduce_scattered, AdamW on each device's shard of the state, "
             "parameters all_gathered", lambda net: (ordo.ZeroRedundancyOptimizer(
                 net.parameters(), ordo.optim.AdamW, lr=3e-3, weight_decay=1e-4, grad_clipping=True, max_norm=1.0),
                 lambda optimizer: optimizer.step()))):
        if master:
            print(f"\n{title}", flush=True)
        net = mlp()
        ordo.broadcast_master_param(net)
        optimizer, step_fn = make(net)
        accuracy = fit(index, net, optimizer, step_fn, data)
        results[title[:2]] = (accuracy, same_weights(net))
        if master:
            same = "yes" if results[title[:2]][1] else "NO"
            print(f"  held-out accuracy {accuracy:.3f} (target 0.95); every device holds the same weights: {same}",
                  flush=True)
    return results


def tour(index):
    """Every collective once: this device's result against the value xla_model gives."""
    world = ordo.world_size()
    me = ordo.tensor([float(index)] * 2)
    pairs = [(i, (i + 1) % world) for i in range(world)]
    got = {
        "all_reduce(sum)": ordo.all_reduce(ordo.REDUCE_SUM, me),
        "all_gather": ordo.all_gather(me, 0),
        "reduce_scatter(sum)": ordo.reduce_scatter(ordo.REDUCE_SUM, ordo.tensor([float(index)] * world), 1.0, 0,
                                                   world),
        "all_to_all": ordo.all_to_all(ordo.tensor([float(10 * index + j) for j in range(world)]), 0, 0, world),
        "collective_permute": ordo.collective_permute(me, pairs),
    }
    ordo.mark_step()
    total = float(sum(range(world)))
    expected = {
        "all_reduce(sum)": [total] * 2,
        "all_gather": [float(d) for d in range(world) for _ in range(2)],
        "reduce_scatter(sum)": [total],
        "all_to_all": [float(10 * d + index) for d in range(world)],
        "collective_permute": [float((index - 1) % world)] * 2,
    }
    return [(name, got[name].numpy().tolist(), expected[name]) for name in got]


def job(index, data):
    results = train_both(index, data)
    every = ordo.mesh_reduce("tour", tour(index), lambda all_devices: all_devices)
    ok = all(a >= 0.95 and same for a, same in results.values())
    if ordo.is_master_ordinal(local=False):
        print("\n3. every collective, each device's result against torch_xla's")
        for row, (name, _, _) in enumerate(every[0]):
            cells = []
            for device, lines in enumerate(every):
                _, got, want = lines[row]
                ok = ok and got == want
                cells.append(f"{device}:{'ok' if got == want else 'MISMATCH ' + str(got)}")
            print(f"  {name:<20} {' '.join(cells)}   device 0 got {every[0][row][1]}")
    return ok


def timeline_steps(index, data):
    """A few data-parallel steps of a fresh model, for the timeline."""
    net = mlp()
    fit(index, net, ordo.optim.SGD(net.parameters(), lr=0.1, momentum=0.9), ordo.optimizer_step, data, epochs=1,
        steps=TIMELINE_STEPS)


def draw_timeline(data):
    """Traces TIMELINE_STEPS steps on every device and draws them (every process traces; process 0 writes)."""
    os.makedirs(os.path.dirname(TIMELINE), exist_ok=True)
    ordo.start_trace(TIMELINE + ".json")
    ordo.spawn(timeline_steps, args=(data,))
    ordo.stop_trace()
    if ordo.is_master_ordinal(local=False):
        png = ordo.plot_timeline(TIMELINE + ".json", TIMELINE + ".png",
                                 title=f"{TIMELINE_STEPS} data-parallel steps on {ordo.world_size()} devices")
        print(f"\n4. a timeline of {TIMELINE_STEPS} training steps: {os.path.relpath(png)} "
              f"(Chrome trace: {os.path.relpath(TIMELINE + '.json')}, opens in ui.perfetto.dev)")


def short_metrics_report():
    """torch_xla's report, cut to the step's timings and the counters a user looks at first."""
    keep = ("CompileTime", "ExecuteTime", "CollectiveWaitTime", "MarkStep", "CachedCompile", "UncachedCompile",
            "AllReduce", "ReduceScatter", "AllGather")
    blocks = ordo.metrics_report().replace("\nMetric:", "\n\0Metric:").replace("\nCounter:", "\n\0Counter:")
    chosen = [b for b in blocks.split("\0") if b.split("\n")[0].split(": ")[-1] in keep]
    return "metrics (ordo.metrics_report(), short):\n" + "".join(chosen).rstrip()


def main():
    world = ordo.world_size()
    if world != DEVICES:
        sys.exit(f"ordo demo: needs a world of {DEVICES} devices, this one has {world}: run it without "
                 f"ORDO_NUM_DEVICES, or as scripts/demo.sh -np 2 -x ORDO_NUM_DEVICES=2")
    data = digits()
    if ordo.is_master_ordinal(local=False):
        print(f"ordo demo: an MLP (64-{HIDDEN}-{HIDDEN}-10) learns sklearn's handwritten digits on {world} devices "
              f"({len(data[0])} training images, {len(data[2])} held out), global batch {GLOBAL_BATCH}")
    before = ordo.compile_cache_stats()
    oks = ordo.spawn(job, args=(data,))
    after = ordo.compile_cache_stats()
    if ordo.is_master_ordinal(local=False):
        compiled = after["misses"] - before["misses"]
        reused = after["hits"] - before["hits"]
        print(f"\ngraphs: {compiled} compiled, {reused} reused from the compile cache (this process)")
        print(short_metrics_report())
    draw_timeline(data)
    if ordo.is_master_ordinal(local=False):
        print(f"everything matched: {'yes' if all(oks) else 'NO'}")
    sys.exit(0 if all(oks) else 1)


if __name__ == "__main__":
    main()
