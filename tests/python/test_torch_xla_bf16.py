"""torch.bfloat16 and torch.float16 on the xla device, and XLA_USE_BF16=1
(float32 tensors held as bfloat16, float32 to torch), against torch on the
CPU (issue 37)."""

import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
xla = pytest.importorskip("ordo.torch_xla")

import ordo.torch_xla.core.xla_model as xm  # noqa: E402
from package_dir import PYTHON_DIR



def rounding_step(reference, dtype):
    """Twice the spacing of dtype's values at each reference value: room for
    one rounding of float32's result, and one of an input."""
    ref = reference.abs().float()
    return (torch.maximum(ref.to(dtype).float(), ref) * torch.finfo(dtype).eps * 2 + torch.finfo(dtype).tiny)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_uploads_and_downloads_keep_the_bits(dtype):
    d = xm.xla_device()
    bits = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16)
    cpu = bits.view(dtype)
    x = cpu.to(d)
    assert x.dtype == dtype and x.device.type == "xla"
    assert torch.equal(x.cpu().view(torch.int16), bits)
    # .to on the device rounds as torch's CPU conversion does, NaN included.
    f = torch.randn(4099) * 1000
    f[::97] = float("nan")
    f[5] = float("inf")
    assert torch.equal(f.to(d).to(dtype).cpu().view(torch.int16), f.to(dtype).view(torch.int16))
    assert torch.equal(x.float().cpu().view(torch.int32), cpu.float().view(torch.int32))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_elementwise_and_linear_within_one_rounding_of_float32(dtype):
    torch.manual_seed(0)
    d = xm.xla_device()
    x, w, b = torch.randn(16, 64).to(dtype), torch.randn(32, 64).to(dtype), torch.randn(32).to(dtype)
    cases = [
        lambda x, w, b: torch.relu(x * 2 + 1).sum(dim=1),
        lambda x, w, b: torch.tanh(x) - x.exp() / 3,
        lambda x, w, b: torch.nn.functional.linear(x, w, b),
        lambda x, w, b: x @ w.t(),
        lambda x, w, b: torch.softmax(x, dim=1),
    ]
    for fn in cases:
        got = fn(x.to(d), w.to(d), b.to(d))
        assert got.dtype == dtype
        want = fn(x.float(), w.float(), b.float())
        err = (got.cpu().float() - want).abs()
        assert torch.all(err <= rounding_step(want, dtype) + 1e-3 * want.abs().max()), fn


def run_with_bf16(script):
    env = dict(os.environ, XLA_USE_BF16="1", PYTHONPATH=PYTHON_DIR)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_xla_use_bf16_holds_float32_as_bfloat16():
    out = run_with_bf16("""
import torch, ordo, ordo.torch_xla
import ordo.torch_xla.core.xla_model as xm
from ordo import _torch
assert _torch.use_bf16()
d = xm.xla_device()
x = torch.tensor([1.0, 1.0 / 3, 1e-3, 3.1415927, -2.0 ** 100, 70000.0])
t = x.to(d)
assert t.dtype == torch.float32                      # torch sees float32
assert _torch.to_ordo(t).dtype == ordo.bfloat16      # the device holds bfloat16
back = t.cpu()
assert back.dtype == torch.float32
assert torch.equal(back, x.to(torch.bfloat16).float()), back
y = (t * 3).sum()
assert y.dtype == torch.float32 and _torch.to_ordo(y).dtype == ordo.bfloat16
w = torch.nn.Linear(8, 4).to(d)
out = w(torch.ones(2, 8).to(d))
assert out.dtype == torch.float32 and _torch.to_ordo(out).dtype == ordo.bfloat16
out.sum().backward()
assert w.weight.grad.dtype == torch.float32 and _torch.to_ordo(w.weight.grad).dtype == ordo.bfloat16
# The MNIST CNN's layers train, held in bfloat16, and no op falls back that does not
# without the flag (fill_ does either way).
import torch.nn.functional as F
import ordo.torch_xla.debug.metrics as met
torch.manual_seed(0)
cnn = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 5), torch.nn.MaxPool2d(2), torch.nn.BatchNorm2d(4),
                          torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(64, 10)).to(d)
opt = torch.optim.SGD(cnn.parameters(), lr=0.1, momentum=0.5)
images, labels = torch.randn(8, 1, 12, 12).to(d), torch.randint(0, 10, (8,)).to(d)
losses = []
for _ in range(3):
    opt.zero_grad()
    loss = F.nll_loss(F.log_softmax(cnn(images), 1), labels)
    loss.backward()
    opt.step()
    xm.mark_step()
    losses.append(loss.item())
assert losses[-1] < losses[0], losses
assert _torch.to_ordo(cnn[0].weight).dtype == ordo.bfloat16 and cnn[0].weight.dtype == torch.float32
assert [n for n in met.counter_names() if n.startswith("aten::") and n != "aten::fill_"] == []
print(back.tolist())
""")
    assert out.strip() == str(torch.tensor([1.0, 1.0 / 3, 1e-3, 3.1415927, -2.0 ** 100, 70000.0])
                              .to(torch.bfloat16).float().tolist())


def test_without_the_flag_float32_stays_float32():
    from ordo import _torch
    assert not _torch.use_bf16()
    t = torch.tensor([1.0 / 3]).to(xm.xla_device())
    assert _torch.to_ordo(t).dtype == np.float32
    assert t.cpu().item() == torch.tensor(1.0 / 3).item()
