"""Optimizers with torch.optim's API and PyTorch 1.13's update formulas.

    import ordo

    w = ordo.tensor([[1.0, 2.0]], requires_grad=True)
    opt = ordo.optim.SGD([w], lr=0.1, momentum=0.9)
    (w * w).sum().backward()
    opt.step()        # the update joins the lazy graph
    opt.zero_grad()
    ordo.mark_step()  # runs it: w is now [[0.8, 1.6]]

ZeroRedundancyOptimizer (torch_xla's ZeRO-1) shards a wrapped optimizer's
state over the devices; ordo.reduce_gradients and ordo.optimizer_step
average gradients for data-parallel training. lr_scheduler holds torch's
learning rate schedules: changing a learning rate compiles nothing new."""

from . import lr_scheduler
from ._adam import Adam, AdamW
from ._optimizer import Optimizer, required
from ._sgd import SGD
from ._zero1 import ZeroRedundancyOptimizer

__all__ = ["Adam", "AdamW", "Optimizer", "SGD", "ZeroRedundancyOptimizer", "lr_scheduler", "required"]
