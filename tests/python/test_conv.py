"""conv1d and conv2d (ordo.nn.functional, ordo.nn.Conv1d/Conv2d) against
torch 1.13 on CPU: the output and the gradients of input, weight and bias
over shape classes, within the error of float32 sums taken in another
order; the gradient rules against finite differences in float64; the same
bits whatever ORDO_KERNEL_THREADS is; errors before anything is traced;
and Conv2d in a training step that compiles once."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import ordo
import ordo.nn.functional as F
from package_dir import PYTHON_DIR


# (name, x shape, w shape, keyword arguments, bias)
CASES_2D = [
    ("batch 1", (1, 3, 8, 8), (4, 3, 3, 3), dict(padding=1), True),
    ("odd sizes", (3, 5, 11, 7), (6, 5, 3, 2), dict(stride=(2, 1), padding=(1, 0)), True),
    ("stride above the kernel", (2, 4, 13, 13), (5, 4, 2, 2), dict(stride=3), True),
    ("depthwise", (2, 6, 9, 9), (6, 1, 3, 3), dict(groups=6, padding=1), True),
    ("groups and dilation", (2, 6, 9, 8), (4, 3, 3, 3), dict(groups=2, dilation=2, padding=2), False),
    ("padding past the window", (2, 3, 5, 5), (4, 3, 3, 3), dict(padding=(6, 4)), True),
    ("1x1", (4, 8, 7, 7), (5, 8, 1, 1), {}, True),
    ("1x1 strided", (2, 8, 7, 7), (5, 8, 1, 1), dict(stride=2), False),
    ("same, even kernel", (2, 3, 8, 9), (4, 3, 4, 2), dict(padding="same", dilation=(1, 2)), True),
    ("valid", (2, 3, 8, 9), (4, 3, 8, 9), dict(padding="valid"), True),
    ("dilation with stride", (2, 3, 12, 12), (4, 3, 3, 3), dict(dilation=3, stride=2), True),
    ("samples share a tile", (16, 10, 12, 12), (20, 10, 5, 5), {}, True),
    ("rows split into tiles", (1, 64, 30, 30), (8, 64, 3, 3), dict(padding=1, stride=(1, 2)), True),
    ("blocks of samples and a shorter last", (11, 4, 9, 9), (6, 4, 3, 3), dict(padding=1), True),
    ("one input channel", (9, 1, 14, 14), (5, 1, 5, 5), {}, True),
]
CASES_1D = [
    ("1d", (2, 3, 17), (4, 3, 5), dict(stride=2, padding=2), True),
    ("1d depthwise same", (3, 4, 10), (4, 1, 4), dict(groups=4, padding="same"), True),
    ("1d dilation", (1, 2, 20), (3, 2, 3), dict(dilation=4), False),
]


def torch_conv(x_shape):
    return torch.nn.functional.conv1d if len(x_shape) == 3 else torch.nn.functional.conv2d


def ordo_conv(x_shape):
    return F.conv1d if len(x_shape) == 3 else F.conv2d


def arrays(x_shape, w_shape, bias, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    b = rng.standard_normal(w_shape[0]).astype(dtype) if bias else None
    return x, w, b


def torch_results(x, w, b, kwargs, seed_grad):
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    tb = None if b is None else torch.tensor(b, requires_grad=True)
    y = torch_conv(x.shape)(tx, tw, tb, **kwargs)
    (y * torch.tensor(seed_grad)).sum().backward()
    grads = [tx.grad.numpy(), tw.grad.numpy()] + ([] if b is None else [tb.grad.numpy()])
    return y.detach().numpy(), grads


def ordo_results(x, w, b, kwargs, seed_grad, permuted=False):
    """ordo's output and gradients; permuted: x and w enter as permutes of
    differently laid out tensors (non-contiguous, as a torch view)."""
    if permuted:
        x_leaf = ordo.tensor(np.ascontiguousarray(np.swapaxes(x, 1, -1)), requires_grad=True)
        w_leaf = ordo.tensor(np.ascontiguousarray(np.swapaxes(w, 0, 1)), requires_grad=True)
        ox, ow = x_leaf.transpose(1, x.ndim - 1), w_leaf.transpose(0, 1)
    else:
        x_leaf = ox = ordo.tensor(x, requires_grad=True)
        w_leaf = ow = ordo.tensor(w, requires_grad=True)
    ob = None if b is None else ordo.tensor(b, requires_grad=True)
    y = ordo_conv(x.shape)(ox, ow, ob, **kwargs)
    (y * ordo.tensor(seed_grad)).sum().backward()
    grads = [x_leaf.grad.numpy(), w_leaf.grad.numpy()] + ([] if b is None else [ob.grad.numpy()])
    if permuted:
        grads[0], grads[1] = np.swapaxes(grads[0], 1, -1), np.swapaxes(grads[1], 0, 1)
    return y.numpy(), grads


def assert_close_to_torch(got, want, what):
    # float32 sums of the same terms in another order: relative to the largest value.
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(want).max())), err_msg=what)


@pytest.mark.parametrize("name, x_shape, w_shape, kwargs, bias", CASES_2D + CASES_1D,
                         ids=[c[0] for c in CASES_2D + CASES_1D])
@pytest.mark.parametrize("permuted", [False, True], ids=["contiguous", "permuted"])
def test_output_and_gradients_match_torch(name, x_shape, w_shape, kwargs, bias, permuted):
    x, w, b = arrays(x_shape, w_shape, bias, np.float32)
    want_y, want_grads = torch_results(x, w, b, kwargs, np.ones(1, np.float32))
    seed_grad = np.random.default_rng(1).standard_normal(want_y.shape).astype(np.float32)
    want_y, want_grads = torch_results(x, w, b, kwargs, seed_grad)
    got_y, got_grads = ordo_results(x, w, b, kwargs, seed_grad, permuted)
    assert got_y.shape == want_y.shape and got_y.dtype == np.float32
    assert_close_to_torch(got_y, want_y, "output")
    for what, got, want in zip(("input", "weight", "bias"), got_grads, want_grads):
        assert got.shape == want.shape, what
        assert_close_to_torch(got, want, f"{what}'s gradient")


def test_unbatched_input_is_a_batch_of_one():
    x, w, b = arrays((3, 9, 8), (4, 3, 3, 3), True, np.float64)
    got = F.conv2d(ordo.tensor(x), ordo.tensor(w), ordo.tensor(b), padding=1).numpy()
    want = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), padding=1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name, x_shape, w_shape, kwargs, bias",
                         [CASES_2D[i] for i in (1, 3, 4, 8)] + [CASES_1D[0]], ids=lambda v: v if isinstance(v, str) else "")
def test_gradient_rules_match_finite_differences_in_float64(name, x_shape, w_shape, kwargs, bias):
    x, w, b = arrays(x_shape, w_shape, bias, np.float64, seed=3)
    seed_grad = np.random.default_rng(4).standard_normal(
        torch_conv(x_shape)(torch.tensor(x), torch.tensor(w), None, **kwargs).shape)

    def loss(xv, wv, bv):
        ob = None if bv is None else ordo.tensor(bv)
        y = ordo_conv(x_shape)(ordo.tensor(xv), ordo.tensor(wv), ob, **kwargs)
        return float((y * ordo.tensor(seed_grad)).sum().numpy())

    _, grads = ordo_results(x, w, b, kwargs, seed_grad)
    rng = np.random.default_rng(5)
    for index, array in enumerate([x, w] + ([] if b is None else [b])):
        for flat in rng.choice(array.size, size=min(6, array.size), replace=False):
            moved = [x, w, b]
            step = 1e-6
            plus, minus = array.copy(), array.copy()
            plus.flat[flat] += step
            minus.flat[flat] -= step
            moved[index] = plus
            up = loss(*moved)
            moved[index] = minus
            difference = (up - loss(*moved)) / (2 * step)
            assert abs(grads[index].flat[flat] - difference) < 1e-6 * (1 + abs(difference)), (index, flat)


THREADS_SCRIPT = r"""
import hashlib, numpy as np, ordo
import ordo.nn.functional as F
rng = np.random.default_rng(9)
digest = hashlib.sha256()
for x_shape, w_shape, kwargs in [((6, 16, 20, 20), (16, 16, 3, 3), dict(padding=1)),
                                 ((40, 10, 12, 12), (20, 10, 5, 5), {}),
                                 ((2, 64, 30, 30), (32, 64, 3, 3), dict(stride=2, padding=1)),
                                 ((4, 12, 50), (12, 1, 5), dict(groups=12, padding="same")),
                                 ((11, 8, 10, 10), (8, 8, 3, 3), dict(padding=1)),
                                 ((9, 1, 16, 16), (6, 1, 5, 5), {})]:
    x = ordo.tensor(rng.standard_normal(x_shape).astype(np.float32), requires_grad=True)
    w = ordo.tensor(rng.standard_normal(w_shape).astype(np.float32), requires_grad=True)
    conv = F.conv1d if len(x_shape) == 3 else F.conv2d
    y = conv(x, w, **kwargs)
    (y * y).sum().backward()
    for result in (y, x.grad, w.grad):
        digest.update(result.numpy().tobytes())
print(digest.hexdigest())
"""


def test_results_have_the_same_bits_whatever_the_kernel_thread_count():
    digests = []
    for threads in ("1", "2"):
        env = dict(os.environ, ORDO_NUM_DEVICES="1", ORDO_KERNEL_THREADS=threads, PYTHONPATH=PYTHON_DIR)
        result = subprocess.run([sys.executable, "-c", THREADS_SCRIPT], capture_output=True, text=True, timeout=120,
                                env=env)
        assert result.returncode == 0, result.stderr
        digests.append(result.stdout.strip())
    assert len(digests[0]) == 64 and digests[0] == digests[1]


def test_bad_arguments_raise_value_error_and_trace_nothing():
    x, w = ordo.zeros([2, 4, 6, 6]), ordo.zeros([6, 4, 3, 3])
    ordo.mark_step(wait=True)
    before = ordo._C.dump_pending_graph()
    calls = [
        ("expects 4 input channels", lambda: F.conv2d(ordo.zeros([2, 3, 6, 6]), w)),
        ("must divide the input's 4 channels", lambda: F.conv2d(x, ordo.zeros([6, 1, 3, 3]), groups=3)),
        ("must divide the weight's 6 output channels", lambda: F.conv2d(x, ordo.zeros([6, 1, 3, 3]), groups=4)),
        ("larger than the padded input", lambda: F.conv2d(x, ordo.zeros([6, 4, 9, 3]), padding=1)),
        ("expected a 4-d", lambda: F.conv2d(ordo.zeros([6, 6]), w)),
        ("not supported for strided", lambda: F.conv2d(x, w, stride=2, padding="same")),
        ("invalid padding string", lambda: F.conv2d(x, w, padding="full")),
        ("stride must be an int or 2 ints", lambda: F.conv2d(x, w, stride=(1, 1, 1))),
    ]
    for message, call in calls:
        with pytest.raises(ValueError, match=message):
            call()
    assert ordo._C.dump_pending_graph() == before
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        ordo.nn.Conv2d(4, 6, 3, groups=3)


def test_modules_initialize_as_torch_and_match_its_output():
    ordo.manual_seed(0)
    conv = ordo.nn.Conv2d(4, 6, (3, 2), stride=2, padding=1, groups=2)
    assert conv.weight.shape == (6, 2, 3, 2) and conv.bias.shape == (6,)
    bound = 1 / np.sqrt(2 * 3 * 2)  # kaiming_uniform(a=sqrt(5)): 1/sqrt(fan_in), the bias's too
    for p in (conv.weight.numpy(), conv.bias.numpy()):
        assert np.abs(p).max() <= bound and np.abs(p).max() > 0.5 * bound
    reference = torch.nn.Conv2d(4, 6, (3, 2), stride=2, padding=1, groups=2)
    reference.load_state_dict({k: torch.tensor(v.numpy()) for k, v in conv.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 4, 9, 8)).astype(np.float32)
    assert_close_to_torch(conv(ordo.tensor(x)).numpy(), reference(torch.tensor(x)).detach().numpy(), "Conv2d")
    line = ordo.nn.Conv1d(3, 5, 4, padding="same", bias=False, dtype=np.float64)
    assert line.bias is None and line.weight.dtype == np.float64
    assert repr(line) == "Conv1d(3, 5, kernel_size=(4,), stride=(1,), padding='same', bias=False)"


def test_conv2d_trains_and_its_step_compiles_once():
    ordo.manual_seed(3)
    model = ordo.nn.Sequential(ordo.nn.Conv2d(1, 4, 3, padding=1), ordo.nn.ReLU(), ordo.nn.Conv2d(4, 4, 3, stride=2),
                               ordo.nn.ReLU(), ordo.nn.Flatten(), ordo.nn.Linear(4 * 3 * 3, 3))
    optimizer = ordo.optim.SGD(model.parameters(), lr=0.05)
    rng = np.random.default_rng(0)
    x = ordo.tensor(rng.standard_normal((8, 1, 8, 8)).astype(np.float32))
    y = ordo.tensor(rng.integers(0, 3, 8))
    losses, misses = [], []
    for _ in range(6):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        ordo.mark_step(wait=True)
        losses.append(float(loss.numpy()))
        misses.append(ordo.compile_cache_stats()["misses"])
    assert losses[-1] < losses[0]
    assert misses[2:] == [misses[1]] * 4, misses  # from the second step on, every step is a cache hit
