"""ZeRO-1 (ordo.ZeroRedundancyOptimizer) against the plain optimizer under
data parallel, as torch_xla's test_zero1: the same parameters after every
step, and each device's optimizer state its chunk of the plain optimizer's,
also across a state_dict()/load_state_dict() round trip."""

import numpy as np
import pytest

import ordo
import spmd
import training

STEPS = 20
MAX_NORM = 0.05  # below the gradients' norm: clipping changes every step
OPTIMIZERS = {
    "sgd momentum": (ordo.optim.SGD, dict(lr=0.05, momentum=0.9)),
    "adamw": (ordo.optim.AdamW, dict(lr=0.01, weight_decay=0.05)),
}
LAYOUTS = [  # (world, sharding groups)
    (2, None), (4, None), (8, None), (4, [[0, 1], [2, 3]]), (8, [[0, 1, 2, 3], [4, 5, 6, 7]]),
]


def clip_like_zero1(params):
    """The plain optimizer's reference for ZeRO-1's clipping: the same
    coefficient from the global norm of the averaged gradients."""
    total = ordo.zeros((), dtype=np.float64)
    for p in params:
        total = total + (p.grad * p.grad).sum()
    coefficient = MAX_NORM / (ordo.sqrt(total) + 1e-6)
    clip = ordo.where(coefficient < 1, coefficient, 1.0)
    for p in params:
        p.grad = p.grad * clip
    return ordo.sqrt(total)


def chunk(value, count, rank):
    rows = -(-value.shape[0] // count) * count
    padded = np.zeros((rows, *value.shape[1:]), value.dtype)
    padded[:value.shape[0]] = value
    return np.split(padded, count)[rank]


def assert_state_is_my_chunk(plain, zero):
    base = zero.state_dict()["base_state"]
    full = plain.state_dict()["state"]
    assert sorted(base) == sorted(full)
    for index, values in full.items():
        assert sorted(base[index]) == sorted(values)
        for key, value in values.items():
            if isinstance(value, ordo.Tensor):
                np.testing.assert_allclose(base[index][key].numpy(),
                                           chunk(value.numpy(), zero.local_world_size, zero.local_rank),
                                           rtol=0, atol=1e-10, err_msg=f"state {index} {key}")
            else:
                assert base[index][key] == value


@pytest.mark.parametrize("clipping", [False, True], ids=["no clipping", "clipping"])
@pytest.mark.parametrize("name", OPTIMIZERS)
@pytest.mark.parametrize("world, sharding_groups", LAYOUTS, ids=[f"{w}dev {g}" for w, g in LAYOUTS])
def test_zero1_matches_the_plain_optimizer(world, sharding_groups, name, clipping):
    spmd.restart(world)
    optimizer_class, options = OPTIMIZERS[name]

    def make_zero(params):
        return ordo.ZeroRedundancyOptimizer(params, optimizer_class, grad_clipping=clipping, max_norm=MAX_NORM,
                                            sharding_groups=sharding_groups, **options)

    def run(index):
        weights = training.initial_weights(np.float64)
        plain_params, zero_params = training.ordo_params(weights), training.ordo_params(weights)
        plain, zero = optimizer_class(plain_params, **options), make_zero(zero_params)
        for step in range(STEPS):
            if step == STEPS // 2:
                plain_state, zero_state = plain.state_dict(), zero.state_dict()
                assert zero_state["shape_info"] == {i: s for i, s in enumerate(training.SHAPES)}
                plain, zero = optimizer_class(plain_params, **options), make_zero(zero_params)
                plain.load_state_dict(plain_state)
                zero.load_state_dict(zero_state)
                assert_state_is_my_chunk(plain, zero)
            x, y = (array[index::world] for array in training.batch(step, np.float64))
            training.ordo_backward(plain_params, x, y)
            training.ordo_backward(zero_params, x, y)
            ordo.reduce_gradients(plain)
            if clipping:
                norm = clip_like_zero1(plain_params)
            plain.step()
            zero.step()
            plain.zero_grad()
            zero.zero_grad()
            ordo.mark_step()
            if clipping:
                assert norm.item() > MAX_NORM
                np.testing.assert_allclose(zero.grad_norm.item(), norm.item(), rtol=1e-12)
            for mine, theirs in zip(training.values(zero_params), training.values(plain_params)):
                np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-10, err_msg=f"step {step}")
            assert all(p.grad is None for p in zero_params)
        assert_state_is_my_chunk(plain, zero)
        return training.values(zero_params)

    results = ordo.spawn(run)
    for result in results[1:]:
        for mine, first in zip(result, results[0]):
            np.testing.assert_array_equal(mine, first)


def test_a_device_outside_the_sharding_groups_is_refused():
    spmd.restart(2)

    def run(index):
        params = training.ordo_params(training.initial_weights(np.float64))
        with pytest.raises(ValueError, match="missing from the sharding_groups"):
            ordo.ZeroRedundancyOptimizer(params, ordo.optim.SGD, lr=0.1, sharding_groups=[[1 - index]])

    ordo.spawn(run)


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_zero1_under_a_schedule_matches_plain_data_parallel_with_clip_grad_norm(name):
    """The user's way to the same training: the plain optimizer with
    nn.utils.clip_grad_norm_ and an lr_scheduler on each, against ZeRO-1
    clipping by itself (its base optimizer takes the scheduled lr)."""
    world = 4
    spmd.restart(world)
    optimizer_class, options = OPTIMIZERS[name]

    def run(index):
        weights = training.initial_weights(np.float64)
        plain_params, zero_params = training.ordo_params(weights), training.ordo_params(weights)
        plain = optimizer_class(plain_params, **options)
        zero = ordo.ZeroRedundancyOptimizer(zero_params, optimizer_class, max_norm=MAX_NORM, **options)
        schedules = [ordo.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5) for o in (plain, zero)]
        for step in range(10):
            x, y = (array[index::world] for array in training.batch(step, np.float64))
            training.ordo_backward(plain_params, x, y)
            training.ordo_backward(zero_params, x, y)
            ordo.reduce_gradients(plain)
            norm = ordo.nn.utils.clip_grad_norm_(plain_params, MAX_NORM)
            plain.step()
            zero.step()
            plain.zero_grad()
            zero.zero_grad()
            for schedule in schedules:
                schedule.step()
            ordo.mark_step()
            np.testing.assert_allclose(zero.grad_norm.item(), norm.item(), rtol=1e-12)
            assert zero.base_optimizer.param_groups[0]["lr"] == options["lr"] * 0.5 ** (step // 3)
            for mine, theirs in zip(training.values(zero_params), training.values(plain_params)):
                np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-10, err_msg=f"step {step}")
        assert zero.param_groups[0]["lr"] == plain.param_groups[0]["lr"] == options["lr"] * 0.5 ** 3

    ordo.spawn(run)
