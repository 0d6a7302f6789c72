"""torch_xla's collectives on torch tensors, run by ordo's in-process
devices through ordo.torch_xla (xmp.spawn, xm.*)."""

import sys
import threading
import time

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("ordo.torch_xla")

import ordo  # noqa: E402
import ordo.torch_xla.core.xla_model as xm  # noqa: E402
import ordo.torch_xla.core.functions as xf  # noqa: E402
import ordo.torch_xla.distributed.xla_multiprocessing as xmp  # noqa: E402

WORLD = 4


@pytest.fixture(autouse=True)
def four_devices():
    ordo.shutdown()
    ordo.init(WORLD)
    yield
    ordo.shutdown()


def spawn_collect(fn):
    results = {}

    def replica(index):
        results[index] = fn(index)

    xmp.spawn(replica, args=())
    return [results[i] for i in range(WORLD)]


def test_all_reduce_of_a_tensor_and_of_a_list_in_place():
    def fn(index):
        device = xm.xla_device()
        assert device == torch.device("xla", index)
        t = torch.full((3,), float(index + 1), device=device)
        total = xm.all_reduce(xm.REDUCE_SUM, t, scale=0.5)
        a, b = torch.ones(2, device=device) * index, torch.full((1,), 2.0, device=device)
        same = xm.all_reduce(xm.REDUCE_MAX, [a, b])
        xm.mark_step()
        return total.cpu().tolist(), a.cpu().tolist(), b.cpu().tolist(), same[0] is a

    for total, a, b, in_place in spawn_collect(fn):
        assert total == [5.0] * 3 and a == [3.0, 3.0] and b == [2.0] and in_place


def test_all_gather_reduce_scatter_all_to_all_permute_and_groups():
    def fn(index):
        d = xm.xla_device()
        x = torch.arange(4.0, device=d) + 10 * index
        gathered = xm.all_gather(x.view(1, 4), dim=0)
        scattered = xm.reduce_scatter(xm.REDUCE_SUM, x, 1.0, 0, WORLD)
        swapped = xm.all_to_all(x, 0, 0, WORLD)
        shifted = xm.collective_permute(x, [[i, (i + 1) % WORLD] for i in range(WORLD)])
        in_pairs = xm.all_reduce(xm.REDUCE_SUM, x, groups=[[0, 1], [2, 3]])
        xm.mark_step()
        return [t.cpu().tolist() for t in (gathered, scattered, swapped, shifted, in_pairs)]

    for i, (gathered, scattered, swapped, shifted, in_pairs) in enumerate(spawn_collect(fn)):
        assert gathered == [[j * 10 + k for k in range(4)] for j in range(4)]
        assert scattered == [sum(10 * j + i for j in range(4))]
        assert swapped == [10 * j + i for j in range(4)]
        assert shifted == [10 * ((i - 1) % WORLD) + k for k in range(4)]
        pair = [0, 1] if i < 2 else [2, 3]
        assert in_pairs == [sum(10 * j + k for j in pair) for k in range(4)]


def test_data_parallel_training_keeps_every_replica_alike_and_compiles_once():
    def fn(index):
        torch.manual_seed(0)  # seeds this replica's device; the model's init is the CPU's
        d = xm.xla_device()
        model = torch.nn.Linear(6, 3)
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.linspace(-1, 1, p.numel()).reshape(p.shape))
        model = model.to(d)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        g = torch.Generator().manual_seed(index)
        compiled = []
        for _ in range(4):
            x, y = torch.randn(8, 6, generator=g).to(d), torch.randint(0, 3, (8,), generator=g).to(d)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            xm.optimizer_step(opt)
            xm.mark_step()
            compiled.append(ordo.counter_value("UncachedCompile"))
        return [p.cpu() for p in model.parameters()], compiled

    results = spawn_collect(fn)
    for params, _ in results[1:]:
        for p, p0 in zip(params, results[0][0]):
            assert torch.equal(p, p0)  # bitwise: every replica applied the same averaged gradient
    assert results[0][1][-1] == results[0][1][-2]


def test_differentiable_all_gather_and_sync_batch_norm():
    def fn(index):
        d = xm.xla_device()
        x = (torch.arange(3.0) + index).to(d).requires_grad_()
        gathered = xf.all_gather(x.view(1, 3))
        (gathered * torch.arange(12.0, device=d).view(4, 3)).sum().backward()
        bn = xf.SyncBatchNorm(2).to(d)
        batch = torch.arange(8.0, device=d).view(4, 2) * (index + 1)
        out = bn(batch)
        xm.mark_step()
        return x.grad.cpu(), out.cpu(), bn.running_mean.cpu()

    results = spawn_collect(fn)
    whole = torch.cat([torch.arange(8.0).view(4, 2) * (i + 1) for i in range(WORLD)])
    reference = torch.nn.BatchNorm1d(2, affine=False)(whole)
    for i, (grad, out, running_mean) in enumerate(results):
        # Every replica's loss uses device i's rows: its gradient is their sum over replicas.
        assert grad.tolist() == (torch.arange(12.0).view(4, 3)[i] * WORLD).tolist()
        torch.testing.assert_close(out, reference[4 * i:4 * i + 4], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(running_mean, 0.1 * whole.mean(0))


def test_a_replica_that_raises_fails_the_spawn_and_its_peers_promptly():
    def fn(index):
        if index == 2:
            raise RuntimeError("replica 2 gives up")
        xm.all_reduce(xm.REDUCE_SUM, torch.ones(2, device=xm.xla_device())).cpu()

    with pytest.raises(RuntimeError, match="replica 2 gives up"):
        xmp.spawn(fn)


def test_collectives_refuse_cpu_tensors_and_other_values():
    with pytest.raises(ValueError, match="xla device"):
        xm.all_gather(torch.ones(2))
    with pytest.raises(TypeError, match="torch tensor"):
        xm.all_reduce(xm.REDUCE_SUM, [[1.0, 2.0]])


def test_ordo_errors_reach_torch_programs_as_ordo_exceptions():
    def mismatched(index):
        d = xm.xla_device()
        t = xm.all_reduce(xm.REDUCE_SUM, torch.ones((2,) if index else (3,), device=d))
        with pytest.raises(ordo.CollectiveMismatchError, match="all_reduce"):
            t.cpu()
        return True

    assert spawn_collect(mismatched) == [True] * WORLD

    def late(index):
        if index:  # its peers come after device 0's timeout
            time.sleep(2)
            return True
        t = xm.all_reduce(xm.REDUCE_SUM, torch.ones(2, device=xm.xla_device()))
        with pytest.raises(ordo.CollectiveTimeoutError, match="missing devices: 1"):
            t.sum().item()
        return True

    ordo.set_collective_timeout(0.5, warn_seconds=10)
    try:
        assert spawn_collect(late) == [True] * WORLD
    finally:
        ordo.set_collective_timeout(300, warn_seconds=30)


def test_outside_a_spawn_the_caller_is_one_replica_as_torch_xlas_single_device_program():
    """No xmp.spawn: one replica, ordinal 0, whose collectives involve no
    other device, in a process of four."""
    assert (xm.xrt_world_size(), xm.get_ordinal(), xm.get_local_ordinal(), xm.is_master_ordinal()) == (1, 0, 0, True)
    t = torch.arange(4.0, device=xm.xla_device())
    assert xm.all_reduce(xm.REDUCE_SUM, t, scale=0.5).cpu().tolist() == [0.0, 0.5, 1.0, 1.5]
    listed = [torch.arange(4.0, device="xla:2"), torch.ones(2, device="xla:2")]
    xm.all_reduce(xm.REDUCE_MAX, listed, groups=[[0]])
    assert [x.cpu().tolist() for x in listed] == [[0.0, 1.0, 2.0, 3.0], [1.0, 1.0]]
    assert xm.all_gather(t).cpu().tolist() == t.cpu().tolist()
    assert xm.reduce_scatter(xm.REDUCE_SUM, t, 1.0, 0, 1).cpu().tolist() == t.cpu().tolist()
    assert xm.all_to_all(t, 0, 0, 1).cpu().tolist() == t.cpu().tolist()
    assert xm.collective_permute(t, [[0, 0]]).cpu().tolist() == t.cpu().tolist()
    assert xm.collective_broadcast([t.clone()])[0].cpu().tolist() == t.cpu().tolist()
    assert xf.all_gather(t).cpu().tolist() == t.cpu().tolist()
    assert xm.rendezvous("alone", b"payload") == [b"payload"]
    assert xm.mesh_reduce("alone", 3, sum) == 3
    model = torch.nn.Linear(3, 2).to(xm.xla_device())
    model(torch.ones(4, 3, device=xm.xla_device())).sum().backward()
    grads = [p.grad.cpu() for p in model.parameters()]
    xm.optimizer_step(torch.optim.SGD(model.parameters(), lr=0.0), barrier=True)  # reduces nothing
    assert all(torch.equal(p.grad.cpu(), g) for p, g in zip(model.parameters(), grads))
    for call in (lambda: xm.all_reduce(xm.REDUCE_SUM, t, groups=[[0, 1], [2, 3]]),
                 lambda: xm.collective_permute(t, [[0, 1], [1, 0]]),
                 lambda: xm.rendezvous("alone", b"", replicas=[0, 1])):
        with pytest.raises(ValueError, match="outside xmp.spawn this program is one replica"):
            call()


def _train_replica(index, make_optimizer, step, steps=3):
    d = xm.xla_device()
    model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 3))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape))
    model = model.to(d)
    optimizer = make_optimizer(model.parameters())
    g = torch.Generator().manual_seed(index)
    for _ in range(steps):
        x, y = torch.randn(6, 5, generator=g).to(d), torch.randint(0, 3, (6,), generator=g).to(d)
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        step(optimizer)
        xm.mark_step()
    return [p.detach().cpu() for p in model.parameters()]


@pytest.mark.parametrize("groups", [None, [[0, 1], [2, 3]]], ids=["one_group", "two_sharding_groups"])
def test_zero1_steps_as_plain_data_parallel(groups):
    from ordo.torch_xla.distributed.zero_redundancy_optimizer import ZeroRedundancyOptimizer

    def average_in_group(opt):
        # ZeRO-1 averages within the sharding group; reduce_gradients
        # divides by the world size whatever the groups (torch_xla's).
        grads = [p.grad for g in opt.param_groups for p in g["params"]]
        xm.all_reduce(xm.REDUCE_SUM, grads, scale=1.0 / len((groups or [range(WORLD)])[0]), groups=groups)
        opt.step()

    def plain(index):
        return _train_replica(index, lambda p: torch.optim.AdamW(p, lr=0.01), average_in_group)

    def zero(index):
        return _train_replica(index, lambda p: ZeroRedundancyOptimizer(
            p, torch.optim.AdamW, lr=0.01, grad_clipping=False, sharding_groups=groups), lambda opt: opt.step())

    for expected, got in zip(spawn_collect(plain), spawn_collect(zero)):
        for p, q in zip(expected, got):
            torch.testing.assert_close(q, p, rtol=1e-6, atol=1e-7)


def test_reduce_gradients_scales_by_the_world_size_with_groups_too():
    def replica(index):
        d = xm.xla_device()
        p = torch.nn.Parameter(torch.zeros(3, device=d))
        opt = torch.optim.SGD([p], lr=1.0)
        p.grad = torch.full((3,), float(xm.get_ordinal() + 1), device=d)
        xm.reduce_gradients(opt, groups=[[0, 1], [2, 3]])
        return p.grad.cpu()

    got = spawn_collect(replica)
    # Sums within each group (1 + 2, 3 + 4) over the world's 4 devices.
    for ordinal, grad in enumerate(got):
        assert grad.tolist() == [(3.0 if ordinal < 2 else 7.0) / WORLD] * 3


def test_zero1_clips_by_the_norm_of_every_shard():
    from ordo.torch_xla.distributed.zero_redundancy_optimizer import ZeroRedundancyOptimizer

    def plain(index):
        def step(opt):
            xm.reduce_gradients(opt)
            torch.nn.utils.clip_grad_norm_([p for g in opt.param_groups for p in g["params"]], 0.05)
            opt.step()
        return _train_replica(index, lambda p: torch.optim.SGD(p, lr=0.1), step)

    def zero(index):
        return _train_replica(index, lambda p: ZeroRedundancyOptimizer(p, torch.optim.SGD, lr=0.1, max_norm=0.05),
                              lambda opt: opt.step())

    for expected, got in zip(spawn_collect(plain), spawn_collect(zero)):
        for p, q in zip(expected, got):
            torch.testing.assert_close(q, p, rtol=1e-5, atol=1e-6)


def test_replicas_that_seed_alike_build_and_draw_alike():
    def fn(index):
        torch.manual_seed(7)
        model = torch.nn.Sequential(torch.nn.Linear(30, 40), torch.nn.Linear(40, 5))  # drawn on the CPU
        d = xm.xla_device()
        dropped = torch.nn.functional.dropout(torch.ones(64, device=d), 0.5)
        noise = torch.randn(16, device=d)
        xm.mark_step()
        return [p.detach().clone() for p in model.parameters()], dropped.cpu(), noise.cpu()

    results = spawn_collect(fn)
    for params, dropped, noise in results[1:]:
        for p, p0 in zip(params, results[0][0]):
            assert torch.equal(p, p0)
        # On the device too, as torch_xla's devices seeded alike draw.
        assert torch.equal(dropped, results[0][1]) and torch.equal(noise, results[0][2])
    assert results[0][2].std() > 0.5
    assert 0 < results[0][1].count_nonzero() < 64


def test_all_gather_and_reduce_scatter_write_into_an_output():
    def fn(index):
        d = xm.xla_device()
        x = torch.full((2,), float(index), device=d)
        gathered = torch.zeros(8, device=d)
        scattered = torch.zeros(1, dtype=torch.float64, device=d)
        same = xm.all_gather(x, dim=0, output=gathered)
        xm.reduce_scatter(xm.REDUCE_SUM, torch.arange(4.0, device=d), 1.0, 0, WORLD, output=scattered)
        xm.mark_step()
        return same is gathered, gathered.cpu().tolist(), scattered.cpu().tolist(), scattered.dtype

    for i, (same, gathered, scattered, dtype) in enumerate(spawn_collect(fn)):
        assert same and gathered == [float(d) for d in range(WORLD) for _ in range(2)]
        assert scattered == [4.0 * i] and dtype == torch.float64


def test_a_replica_that_exits_fails_the_spawn_and_its_peers_fail_as_gone():
    seen = {}

    def fn(index):
        if index == 1:
            sys.exit(3)
        try:
            xm.all_reduce(xm.REDUCE_SUM, torch.ones(2, device=xm.xla_device())).cpu()
        except ordo.CollectiveError as error:
            seen[index] = str(error)
            raise

    started = time.monotonic()
    with pytest.raises(BaseException) as raised:
        xmp.spawn(fn)
    assert time.monotonic() - started < 10  # promptly, not the 300 s timeout
    assert isinstance(raised.value, SystemExit) or "1" in str(raised.value)
    assert seen and all("device 1" in message for message in seen.values())


def test_spawn_of_one_process_runs_a_world_of_one_device_on_the_calling_thread():
    caller = threading.get_ident()

    def fn(index, value):
        t = xm.all_reduce(xm.REDUCE_SUM, torch.full((2,), value, device=xm.xla_device()))
        return index, xm.xrt_world_size(), threading.get_ident() == caller, t.cpu().tolist()

    assert xmp.spawn(fn, args=(3.0,), nprocs=1) == (0, 1, True, [3.0, 3.0])


def test_replicas_that_seed_alike_draw_alike_from_torchs_factories_in_turn():
    # Each replica draws while the others wait, after all have seeded: with
    # torch's one generator the later replicas would continue its stream.
    def fn(index):
        torch.manual_seed(5)
        xm.rendezvous("seeded")
        drawn = None
        for turn in range(WORLD):
            if turn == index:
                shuffled = list(torch.utils.data.DataLoader(range(8), shuffle=True, batch_size=8))[0]
                drawn = [torch.rand(3), torch.randn(3), torch.randint(0, 1000, (3,)), torch.randperm(8),
                         torch.normal(0.0, 1.0, (3,)), torch.bernoulli(torch.full((8,), 0.5)),
                         torch.empty(3).random_(0, 1000), shuffled]
            xm.rendezvous(f"turn {turn}")
        return drawn

    results = spawn_collect(fn)
    for drawn in results[1:]:
        for got, first in zip(drawn, results[0]):
            assert torch.equal(got, first)


def test_distributed_mm_is_the_whole_weight_times_each_replicas_input():
    def fn(index):
        d = xm.xla_device()
        weight = torch.arange(24.0).reshape(3, 8) / 10  # 3 x (2 columns x 4 replicas)
        x = (torch.arange(32.0).reshape(8, 4) - index) / 7
        shard = weight[:, 2 * index:2 * index + 2].to(d)
        product = xf.distributed_mm(shard, x.to(d), split=2)
        with pytest.raises(ValueError, match="split 3 does not divide"):
            xf.distributed_mm(shard, x.to(d), split=3)
        with pytest.raises(ValueError, match="x has 4 rows"):
            xf.distributed_mm(shard, x[:4].to(d))
        return product.cpu(), weight @ x

    for product, expected in spawn_collect(fn):
        torch.testing.assert_close(product, expected, rtol=1e-5, atol=1e-5)
