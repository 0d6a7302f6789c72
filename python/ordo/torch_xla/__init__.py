"""torch_xla's module layout over ordo: PyTorch's `xla` device, run by ordo.

A torch_xla program runs after `torch_xla` becomes `ordo.torch_xla` in its
import lines:

    import torch
    import ordo.torch_xla.core.xla_model as xm

    device = xm.xla_device()                       # torch.device('xla:0')
    model = torch.nn.Linear(4, 2).to(device)
    loss = model(torch.randn(8, 4, device=device)).sum()
    loss.backward()                                # recorded, not run
    xm.mark_step()                                 # one graph: compiled once, then reused
    print(loss.item())

Importing this package registers ordo's kernels for the xla device (the
extension ordo._torch, built when PyTorch's headers are installed).
"""

import torch

from .. import _C  # noqa: F401 - ordo.Tensor's type, before the bridge that uses it
try:
    from .. import _torch
except ImportError as error:  # pragma: no cover - a build without PyTorch
    raise ImportError("ordo.torch_xla needs ordo built with PyTorch (apt-get install libtorch-dev python3-torch, "
                      f"then scripts/build.sh): {error}") from error
from . import _XLAC  # noqa: E402
from ._seeding import install_manual_seed_hook  # noqa: E402

install_manual_seed_hook()

__version__ = "1.13+ordo"
