"""Pooling and batch norm against torch 1.13 on CPU: every op and its
gradients over shape classes (batch 1, odd sizes, stride above the kernel,
the largest padding torch allows, ceil_mode's kept and dropped windows,
non-contiguous inputs); the gradient rules against finite differences in
float64; the modules' running statistics, num_batches_tracked and state
dicts as torch's after several steps and a train/eval switch;
SyncBatchNorm on spawned devices as BatchNorm on the whole batch; the same
bits whatever ORDO_KERNEL_THREADS is; clear errors."""

import numpy as np
import pytest
import torch

import ordo
import ordo.nn.functional as F
from kernel_threads import digests_with_kernel_threads

TF = torch.nn.functional
TOLERANCE = {np.float32: dict(rtol=2e-5, atol=2e-5), np.float64: dict(rtol=1e-12, atol=1e-12)}


def data(shape, dtype=np.float32, seed=0):
    return np.asarray(np.random.default_rng(seed).standard_normal(shape), dtype=dtype)


def both(x, requires_grad=True):
    ours = ordo.tensor(x, requires_grad=requires_grad)
    theirs = torch.tensor(x, requires_grad=requires_grad)
    return ours, theirs


def check(ours, theirs, dtype=np.float32):
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), **TOLERANCE[dtype])


def check_op_and_gradient(shape, ours_fn, torch_fn, dtype=np.float32, transpose=False):
    """The op and its input's gradient (for a random output gradient) as torch's;
    transpose feeds both a non-contiguous view (H and W swapped)."""
    x = data(shape, dtype)
    ox, tx = both(x)
    oin = ordo._C.transpose(ox, -1, -2) if transpose else ox
    tin = tx.transpose(-1, -2) if transpose else tx
    out, ref = ours_fn(oin), torch_fn(tin)
    check(out, ref, dtype)
    g = data(tuple(ref.shape), dtype, seed=1)
    (out * ordo.tensor(g)).sum().backward()
    (ref * torch.tensor(g)).sum().backward()
    check(ox.grad, tx.grad, dtype)


# (shape, kernel, stride, padding, dilation, ceil_mode)
MAX_CASES = [
    ((2, 3, 8, 8), 2, None, 0, 1, False),
    ((1, 1, 7, 9), 3, 2, 1, 1, False),
    ((1, 2, 9, 8), (2, 3), (4, 3), (1, 1), 1, False),  # stride above the kernel
    ((2, 2, 5, 5), 3, 2, 1, 1, True),
    ((2, 2, 6, 6), 2, 2, 1, 1, True),  # ceil adds a window that starts inside
    ((2, 2, 5, 5), 2, 2, 1, 1, True),  # ceil's window that would start in the right padding is dropped
    ((1, 1, 4, 4), 2, 3, 0, 1, True),
    ((1, 2, 11, 10), (3, 2), (2, 3), 1, 2, False),  # dilation
    ((3, 5, 7), 3, 1, 1, 1, True),  # unbatched
    ((2, 4, 24, 24), 5, 1, 2, 1, False),  # the largest padding
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,kernel,stride,padding,dilation,ceil_mode", MAX_CASES)
def test_max_pool2d_and_its_gradient_match_torch(shape, kernel, stride, padding, dilation, ceil_mode, dtype):
    args = (kernel, stride, padding, dilation, ceil_mode)
    check_op_and_gradient(shape, lambda x: F.max_pool2d(x, *args), lambda x: TF.max_pool2d(x, *args), dtype)
    ours, where = F.max_pool2d(ordo.tensor(data(shape, dtype)), *args, return_indices=True)
    _, theirs = TF.max_pool2d(torch.tensor(data(shape, dtype)), *args, return_indices=True)
    np.testing.assert_array_equal(where.numpy(), theirs.numpy())


def test_max_pool2d_keeps_torchs_ties_and_nans():
    x = np.zeros((1, 1, 4, 4), np.float32)
    x[0, 0, 1, 1] = np.nan
    x[0, 0, 3, 2] = -np.inf
    many_ties = np.random.default_rng(0).integers(0, 3, (2, 3, 8, 8)).astype(np.float32)
    for values in (x, np.full_like(x, -np.inf), many_ties):
        ours, where = F.max_pool2d(ordo.tensor(values), 2, return_indices=True)
        theirs, at = TF.max_pool2d(torch.tensor(values), 2, return_indices=True)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        np.testing.assert_array_equal(where.numpy(), at.numpy())
        np.testing.assert_array_equal(F.max_pool2d(ordo.tensor(values), 2).numpy(), theirs.numpy())
        # The gradient goes where the index points: the first of tied
        # maxima, the NaN, the first -inf; also with overlapping windows.
        for args in ((2,), (3, 1, 1)):
            ox, tx = both(values)
            F.max_pool2d(ox, *args).sum().backward()
            TF.max_pool2d(tx, *args).sum().backward()
            np.testing.assert_array_equal(ox.grad.numpy(), tx.grad.numpy())


def test_pooling_takes_non_contiguous_inputs():
    check_op_and_gradient((2, 3, 9, 7), lambda x: F.max_pool2d(x, 3, 2, 1), lambda x: TF.max_pool2d(x, 3, 2, 1),
                          transpose=True)
    check_op_and_gradient((2, 3, 9, 7), lambda x: F.avg_pool2d(x, 2), lambda x: TF.avg_pool2d(x, 2), transpose=True)


AVG_CASES = [c[:4] + (c[5],) for c in MAX_CASES if c[4] == 1]


@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("divisor_override", [None, 5])
@pytest.mark.parametrize("shape,kernel,stride,padding,ceil_mode", AVG_CASES)
def test_avg_pool2d_and_its_gradient_match_torch(shape, kernel, stride, padding, ceil_mode, count_include_pad,
                                                 divisor_override):
    args = (kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    check_op_and_gradient(shape, lambda x: F.avg_pool2d(x, *args), lambda x: TF.avg_pool2d(x, *args))


@pytest.mark.parametrize("shape,size", [((2, 3, 7, 9), (3, 4)), ((1, 2, 5, 5), 1), ((2, 1, 6, 6), (6, 6)),
                                        ((3, 10, 7), (None, 3)), ((1, 2, 4, 4), (8, 3))])
def test_adaptive_avg_pool2d_and_its_gradient_match_torch(shape, size):
    check_op_and_gradient(shape, lambda x: F.adaptive_avg_pool2d(x, size), lambda x: TF.adaptive_avg_pool2d(x, size))


def finite_difference_check(fn, shape, seed=3):
    """fn's input gradient (through the pooling's backward op, whose own rule
    gives the gradient of the gradient) against central differences in float64."""
    x = data(shape, np.float64, seed)
    weights = data(tuple(fn(ordo.tensor(x)).shape), np.float64, seed + 1)
    loss = lambda v: float((fn(ordo.tensor(v)) * ordo.tensor(weights)).sum())  # noqa: E731
    ox = ordo.tensor(x, requires_grad=True)
    (fn(ox) * ordo.tensor(weights)).sum().backward()
    grad = ox.grad.numpy()
    rng = np.random.default_rng(seed)
    for flat in rng.choice(x.size, size=min(12, x.size), replace=False):
        step = np.zeros(x.size)
        step[flat] = 1e-6
        step = step.reshape(x.shape)
        numeric = (loss(x + step) - loss(x - step)) / 2e-6
        np.testing.assert_allclose(grad.reshape(-1)[flat], numeric, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("fn", [lambda x: F.max_pool2d(x, 3, 2, 1), lambda x: F.avg_pool2d(x, 3, 2, 1, True, False),
                                lambda x: F.adaptive_avg_pool2d(x, (2, 3)),
                                lambda x: F.batch_norm(x, None, None, ordo.tensor(data(3, np.float64, 9)),
                                                       ordo.tensor(data(3, np.float64, 8)), True)])
def test_gradients_match_finite_differences_in_float64(fn):
    finite_difference_check(fn, (2, 3, 5, 6))


BN_SHAPES = [(4, 3, 5, 7), (1, 2, 3, 3), (6, 5), (3, 4, 9), (2, 3, 1, 1)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", BN_SHAPES)
def test_batch_norm_training_and_its_gradients_match_torch(shape, dtype):
    channels = shape[1]
    x, w, b = data(shape, dtype) * 2 + 1, data(channels, dtype, 1), data(channels, dtype, 2)
    (ox, tx), (ow, tw), (ob, tb) = both(x), both(w), both(b)
    orm, trm = both(np.zeros(channels, dtype), False)
    orv, trv = both(np.ones(channels, dtype), False)
    out = F.batch_norm(ox, orm, orv, ow, ob, True, 0.1, 1e-5)
    ref = TF.batch_norm(tx, trm, trv, tw, tb, True, 0.1, 1e-5)
    check(out, ref, dtype)
    check(orm, trm, dtype)
    check(orv, trv, dtype)
    g = data(shape, dtype, 3)
    (out * ordo.tensor(g)).sum().backward()
    (ref * torch.tensor(g)).sum().backward()
    for ours, theirs in ((ox, tx), (ow, tw), (ob, tb)):
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-4 if dtype == np.float32 else 1e-10,
                                   atol=1e-4 if dtype == np.float32 else 1e-10)


@pytest.mark.parametrize("momentum", [0.1, None])
@pytest.mark.parametrize("kind,shape", [("BatchNorm2d", (4, 3, 5, 5)), ("BatchNorm1d", (8, 3)),
                                        ("BatchNorm1d", (4, 3, 6))])
def test_batch_norm_modules_track_running_statistics_as_torch(kind, shape, momentum):
    ours = getattr(ordo.nn, kind)(3, momentum=momentum)
    theirs = getattr(torch.nn, kind)(3, momentum=momentum)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(data(3, seed=5)))
    ours.load_state_dict({k: ordo.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    for step in range(4):
        x = data(shape, seed=10 + step) * (step + 1) + step
        check(ours(ordo.tensor(x)), theirs(torch.tensor(x)))
        ordo.mark_step()
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[key].numpy(), value.numpy(), rtol=1e-5, atol=1e-6, err_msg=key)
    assert ours.state_dict()["num_batches_tracked"].dtype == np.int64
    ours.eval()
    theirs.eval()
    x = data(shape, seed=20)
    check(ours(ordo.tensor(x)), theirs(torch.tensor(x)))
    assert int(ours.num_batches_tracked.numpy()) == 4
    with pytest.raises(ValueError, match="expected"):
        ours(ordo.tensor(data((2, 3, 2, 2, 2))))
    ours.train()
    theirs.train()
    check(ours(ordo.tensor(x)), theirs(torch.tensor(x)))


def test_batch_norm_without_affine_or_tracking_is_torchs():
    for affine, track in ((False, True), (True, False), (False, False)):
        ours, theirs = ordo.nn.BatchNorm2d(2, affine=affine, track_running_stats=track), \
            torch.nn.BatchNorm2d(2, affine=affine, track_running_stats=track)
        assert list(ours.state_dict()) == list(theirs.state_dict())
        x = data((3, 2, 4, 4))
        check(ours(ordo.tensor(x)), theirs(torch.tensor(x)))
        ours.eval()
        theirs.eval()
        check(ours(ordo.tensor(x)), theirs(torch.tensor(x)))


def test_state_dict_of_a_cnn_lists_each_modules_parameters_then_buffers_as_torch():
    ours = ordo.nn.Sequential(ordo.nn.BatchNorm2d(2), ordo.nn.MaxPool2d(2), ordo.nn.BatchNorm2d(2),
                              ordo.nn.AdaptiveAvgPool2d(1), ordo.nn.AvgPool2d(1))
    theirs = torch.nn.Sequential(torch.nn.BatchNorm2d(2), torch.nn.MaxPool2d(2), torch.nn.BatchNorm2d(2),
                                 torch.nn.AdaptiveAvgPool2d(1), torch.nn.AvgPool2d(1))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)


def test_sync_batch_norm_on_spawned_devices_is_batch_norm_on_the_whole_batch():
    world = 4
    x = data((world * 2, 3, 4, 5), seed=7)
    g = data(x.shape, seed=8)
    reference = torch.nn.BatchNorm2d(3)
    tx = torch.tensor(x, requires_grad=True)
    steps = []
    for _ in range(2):
        out = reference(tx)
        (out * torch.tensor(g)).sum().backward()
        steps.append(out.detach().numpy())

    def run(index):
        layer = ordo.nn.SyncBatchNorm(3)
        part = slice(2 * index, 2 * index + 2)
        ox = ordo.tensor(x[part], requires_grad=True)
        outputs = []
        for _ in range(2):
            out = layer(ox)
            (out * ordo.tensor(g[part])).sum().backward()
            ordo.mark_step()
            outputs.append(out.numpy())
        return outputs, ox.grad.numpy(), layer.weight.grad.numpy(), {k: v.numpy() for k, v in layer.state_dict().items()}

    results = ordo.spawn(run)
    for index, (outputs, grad, weight_grad, state) in enumerate(results):
        part = slice(2 * index, 2 * index + 2)
        for step, out in enumerate(outputs):
            np.testing.assert_allclose(out, steps[step][part], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(grad, tx.grad.numpy()[part], rtol=1e-4, atol=1e-4)
        # Every device's weight gradient is its own batch's part; their sum is torch's.
        for key, value in reference.state_dict().items():
            np.testing.assert_allclose(state[key], value.numpy(), rtol=1e-5, atol=1e-5, err_msg=key)
    np.testing.assert_allclose(sum(r[2] for r in results), reference.weight.grad.numpy(), rtol=1e-4, atol=1e-4)


THREADS_SCRIPT = """
import hashlib, numpy as np, ordo
import ordo.nn.functional as F
ordo.init(1)
x = ordo.tensor(np.sin(np.arange(8 * 16 * 30 * 30)).reshape(8, 16, 30, 30).astype(np.float32), requires_grad=True)
w = ordo.tensor(np.linspace(0.5, 2, 16).astype(np.float32), requires_grad=True)
outs = [F.max_pool2d(x, 3, 2, 1), F.avg_pool2d(x, 3, 2, 1), F.adaptive_avg_pool2d(x, 7),
        F.batch_norm(x, None, None, w, None, True)]
sum((o * o).sum() for o in outs).backward()
print(hashlib.sha256(b"".join(t.numpy().tobytes() for t in outs + [x.grad, w.grad])).hexdigest())
"""


def test_bits_do_not_depend_on_the_kernel_thread_count():
    first, second = digests_with_kernel_threads(THREADS_SCRIPT)
    assert first == second


@pytest.mark.parametrize("call,message", [
    (lambda x, flat: F.max_pool2d(x, 6), "larger than the padded"),
    (lambda x, flat: F.max_pool2d(x, 3, padding=2), "at most half the kernel"),
    (lambda x, flat: F.avg_pool2d(x, 2, stride=0), "must be positive"),
    (lambda x, flat: F.max_pool2d(flat, 2), "(N, C, H, W) or (C, H, W)"),
    (lambda x, flat: F.adaptive_avg_pool2d(x, 0), "at least 1"),
    (lambda x, flat: F.batch_norm(x, None, None, flat, None, True), "one value per channel (3)"),
    (lambda x, flat: F.batch_norm(x, None, None, None, None, False), "must be given in evaluation"),
])
def test_bad_arguments_are_value_errors_that_record_nothing(call, message):
    x = ordo.tensor(data((2, 3, 5, 5)))
    flat = ordo.tensor(data((6, 25)))
    ordo.mark_step()
    before = ordo._C.dump_pending_graph()
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call(x, flat)
    assert ordo._C.dump_pending_graph() == before
