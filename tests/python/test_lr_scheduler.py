"""ordo.optim.lr_scheduler against torch.optim.lr_scheduler (1.13): the same
learning rates, bit for bit, step after step; state_dict round trips; a
schedule that trains an MLP as torch's does and compiles nothing new."""

import warnings

import numpy as np
import pytest
import torch

import ordo
import training

STEPS = 40


def two_groups(module):
    """An SGD with two parameter groups of their own learning rates, of ordo or of torch."""
    make = ordo.tensor if module is ordo else torch.tensor
    params = [{"params": [make([1.0], requires_grad=True)]},
              {"params": [make([2.0], requires_grad=True)], "lr": 0.3}]
    return (ordo.optim.SGD if module is ordo else torch.optim.SGD)(params, lr=0.1, momentum=0.9)


SCHEDULES = {
    "LambdaLR": lambda m, o: m.LambdaLR(o, lambda epoch: 0.95 ** epoch),
    "LambdaLR per group": lambda m, o: m.LambdaLR(o, [lambda e: 1 / (e + 1), lambda e: 0.9 ** e]),
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lambda epoch: 0.9),
    "StepLR": lambda m, o: m.StepLR(o, step_size=7, gamma=0.5),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[3, 10, 10, 25], gamma=0.3),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.25, total_iters=6),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.1, end_factor=0.9, total_iters=13),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.93),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=17, power=2.0),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=9, eta_min=0.001),
    "SequentialLR": lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.1, total_iters=5), m.CosineAnnealingLR(o, T_max=20)], milestones=[5]),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler([m.ConstantLR(o, factor=0.5, total_iters=4),
                                                         m.ExponentialLR(o, gamma=0.9)]),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2, eta_min=0.01),
    "OneCycleLR": lambda m, o: m.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=STEPS),
    "OneCycleLR three phases": lambda m, o: m.OneCycleLR(o, max_lr=0.8, epochs=4, steps_per_epoch=10,
                                                         anneal_strategy="linear", three_phase=True,
                                                         pct_start=0.25),
}


def lrs(optimizer):
    return [group["lr"] for group in optimizer.param_groups]


def momenta(optimizer):
    return [group["momentum"] for group in optimizer.param_groups]


def run(module, make, steps=STEPS, state_at=None):
    """The lrs after each of `steps` scheduler steps, and the scheduler's
    state_dict after `state_at` of them."""
    optimizer = two_groups(module)
    scheduler_module = ordo.optim.lr_scheduler if module is ordo else torch.optim.lr_scheduler
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's SequentialLR warns of its own step(0)
        scheduler = make(scheduler_module, optimizer)
        seen, state, moved = [lrs(optimizer)], None, [momenta(optimizer)]
        for step in range(steps):
            optimizer.step()
            scheduler.step()
            seen.append(lrs(optimizer))
            moved.append(momenta(optimizer))
            assert scheduler.get_last_lr() == seen[-1]
            if step + 1 == state_at:
                state = scheduler.state_dict()
    return seen, state, moved


@pytest.mark.parametrize("name", SCHEDULES)
def test_every_schedule_sets_torchs_learning_rates_bit_for_bit(name):
    ours, _, our_momenta = run(ordo, SCHEDULES[name])
    theirs, _, their_momenta = run(torch, SCHEDULES[name])
    assert ours == theirs
    assert our_momenta == their_momenta  # OneCycleLR cycles the momentum too


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "LinearLR", "CosineAnnealingLR", "SequentialLR",
                                  "ChainedScheduler", "CosineAnnealingWarmRestarts", "OneCycleLR"])
def test_a_state_dict_taken_midway_resumes_the_schedule_through_a_checkpoint(name, tmp_path):
    make = SCHEDULES[name]
    whole, state, _ = run(ordo, make, state_at=15)
    ordo.save(state, tmp_path / "scheduler.ordo")
    optimizer = two_groups(ordo)
    scheduler = make(ordo.optim.lr_scheduler, optimizer)
    scheduler.load_state_dict(ordo.load(tmp_path / "scheduler.ordo"))
    for group, lr in zip(optimizer.param_groups, whole[15]):
        group["lr"] = lr  # the optimizer's own state_dict carries its lrs
    resumed = []
    for _ in range(STEPS - 15):
        optimizer.step()
        scheduler.step()
        resumed.append(lrs(optimizer))
    assert resumed == whole[16:]


def test_a_lambdas_state_is_saved_when_it_is_an_object():
    class Halving:
        def __init__(self):
            self.factor = 0.5

        def __call__(self, epoch):
            return self.factor ** epoch

    optimizer = two_groups(ordo)
    scheduler = ordo.optim.lr_scheduler.LambdaLR(optimizer, [Halving(), lambda epoch: 1.0])
    scheduler.lr_lambdas[0].factor = 0.25
    state = scheduler.state_dict()
    assert state["lr_lambdas"] == [{"factor": 0.25}, None]
    fresh = ordo.optim.lr_scheduler.LambdaLR(two_groups(ordo), [Halving(), lambda epoch: 1.0])
    fresh.load_state_dict(state)
    assert fresh.lr_lambdas[0].factor == 0.25 and fresh.last_epoch == scheduler.last_epoch


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LambdaLR"])
def test_step_with_an_epoch_uses_torchs_closed_form_and_warns(name):
    results = []
    for module in (ordo, torch):
        optimizer = two_groups(module)
        scheduler = SCHEDULES[name](ordo.optim.lr_scheduler if module is ordo else torch.optim.lr_scheduler,
                                    optimizer)
        optimizer.step()
        seen = []
        for epoch in (4, 12, 3):
            with pytest.warns(UserWarning, match="epoch parameter"):
                scheduler.step(epoch)
            seen.append(lrs(optimizer))
        results.append(seen)
    assert results[0] == results[1]


def test_warm_restarts_anneal_within_epochs_and_one_cycle_ends_at_its_total():
    results = []
    for module in (ordo, torch):
        optimizer = two_groups(module)
        scheduler_module = ordo.optim.lr_scheduler if module is ordo else torch.optim.lr_scheduler
        scheduler = scheduler_module.CosineAnnealingWarmRestarts(optimizer, T_0=3, T_mult=2)
        seen = []
        for epoch in range(12):
            for batch in range(4):
                optimizer.step()
                scheduler.step(epoch + batch / 4)
                seen.append(lrs(optimizer))
        results.append(seen)
    assert results[0] == results[1]
    optimizer = two_groups(ordo)
    scheduler = ordo.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1.0, total_steps=3)
    for _ in range(3):
        optimizer.step()
        scheduler.step()
    with pytest.raises(ValueError, match="Tried to step 5 times. The specified number of total steps is 3"):
        scheduler.step()
    with pytest.raises(ValueError, match="must support momentum"):
        ordo.optim.lr_scheduler.OneCycleLR(ordo.optim.Optimizer([ordo.tensor([1.0], requires_grad=True)], {"lr": 0.1}),
                                           max_lr=1.0, total_steps=3)


def test_a_scheduler_stepped_before_its_optimizer_warns():
    optimizer = two_groups(ordo)
    scheduler = ordo.optim.lr_scheduler.StepLR(optimizer, step_size=2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        scheduler.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        optimizer.step()
        scheduler.step()


def test_get_lr_outside_step_warns_and_get_last_lr_does_not():
    scheduler = ordo.optim.lr_scheduler.ExponentialLR(two_groups(ordo), gamma=0.5)
    with pytest.warns(UserWarning, match="get_last_lr"):
        scheduler.get_lr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert scheduler.get_last_lr() == [0.1, 0.3]


def test_reduce_lr_on_plateau_matches_torch_and_takes_a_tensor():
    metrics = [5, 4, 4, 4, 4, 3.9999, 4, 4, 4, 4, 4, 4, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3]
    results = []
    for module in (ordo, torch):
        for mode, values in (("min", metrics), ("max", [-m for m in metrics])):
            optimizer = two_groups(module)
            scheduler_module = ordo.optim.lr_scheduler if module is ordo else torch.optim.lr_scheduler
            scheduler = scheduler_module.ReduceLROnPlateau(optimizer, mode=mode, patience=2, cooldown=1,
                                                           min_lr=[0.001, 0.01], threshold=0.01)
            seen = []
            for value in values:
                optimizer.step()
                scheduler.step(ordo.tensor(float(value)) if module is ordo else value)
                seen.append(lrs(optimizer))
            results.append(seen)
    assert results[:2] == results[2:]
    assert results[0][-1] == pytest.approx([0.001, 0.01])  # down to each group's min_lr


def test_bad_arguments_are_refused_before_anything_changes():
    optimizer = two_groups(ordo)
    m = ordo.optim.lr_scheduler
    with pytest.raises(TypeError, match="is not an Optimizer"):
        m.StepLR(torch.optim.SGD([torch.tensor([1.0], requires_grad=True)], lr=0.1), step_size=2)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 3"):
        m.LambdaLR(optimizer, [lambda e: 1.0] * 3)
    with pytest.raises(ValueError, match="between 0 and 1"):
        m.ConstantLR(optimizer, factor=2.0)
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        m.ReduceLROnPlateau(optimizer, factor=1.5)
    with pytest.raises(ValueError, match="mode sideways is unknown"):
        m.ReduceLROnPlateau(optimizer, mode="sideways")
    with pytest.raises(KeyError, match="initial_lr"):
        m.StepLR(optimizer, step_size=2, last_epoch=5)
    # Each refusal came before the scheduler touched the optimizer.
    assert lrs(optimizer) == [0.1, 0.3]
    assert all("initial_lr" not in group for group in optimizer.param_groups)
    first = m.ConstantLR(optimizer, factor=0.5)
    before = lrs(optimizer)
    with pytest.raises(ValueError, match="one more than the number of milestone points"):
        m.SequentialLR(optimizer, [first], milestones=[3])
    with pytest.raises(ValueError, match="belong to the same optimizer"):
        m.SequentialLR(optimizer, [first, m.ExponentialLR(two_groups(ordo), gamma=0.5)], milestones=[3])
    with pytest.raises(ValueError, match="at least one scheduler"):
        m.ChainedScheduler([])
    assert lrs(optimizer) == before


TRAININGS = {
    "SGD, CosineAnnealingLR": (lambda m, p: m.SGD(p, lr=0.1, momentum=0.9),
                               lambda m, o: m.lr_scheduler.CosineAnnealingLR(o, T_max=6)),
    "AdamW, OneCycleLR (betas cycle)": (lambda m, p: m.AdamW(p, lr=0.01),
                                        lambda m, o: m.lr_scheduler.OneCycleLR(o, max_lr=0.05, total_steps=12)),
}


@pytest.mark.parametrize("name", TRAININGS)
def test_a_scheduled_training_matches_torch_and_compiles_once(name):
    make_optimizer, make_schedule = TRAININGS[name]
    weights = training.initial_weights(np.float64)
    ours, theirs = training.ordo_params(weights), training.torch_params(weights)
    ours_opt, theirs_opt = make_optimizer(ordo.optim, ours), make_optimizer(torch.optim, theirs)
    ours_sched, theirs_sched = make_schedule(ordo.optim, ours_opt), make_schedule(torch.optim, theirs_opt)
    compiled, used = None, set()
    for step in range(12):
        x, y = training.batch(step, np.float64)
        training.ordo_backward(ours, x, y)
        training.torch_backward(theirs, x, y)
        ours_opt.step()
        theirs_opt.step()
        ours_opt.zero_grad()
        theirs_opt.zero_grad()
        ours_sched.step()
        theirs_sched.step()
        ordo.mark_step(wait=True)
        used.add(ours_opt.param_groups[0]["lr"])
        for mine, reference in zip(training.values(ours), training.values(theirs)):
            np.testing.assert_allclose(mine, reference, rtol=0, atol=1e-10)
        misses = ordo.compile_cache_stats()["misses"]
        if step == 2:
            compiled = misses  # step 0 made the optimizer's state: its own graph
        elif step > 2:
            assert misses == compiled, f"step {step} (lr {ours_opt.param_groups[0]['lr']}) compiled a new graph"
    assert len(used) >= 6  # the schedule really moved the learning rate
