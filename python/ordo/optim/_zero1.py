"""ordo's ZeroRedundancyOptimizer: ZeRO-1 as torch_xla's (the layout and
the step are ordo._zero1's, shared with ordo.torch_xla's), over ordo.optim
optimizers and ordo tensors."""

import numpy as np

from .. import _C
from .. import _zero1
from .._collectives import REDUCE_SUM, all_gather, all_reduce, reduce_scatter
from .._devices import get_ordinal, world_size
from .._tensor import tensor
from ._optimizer import Optimizer, no_grad


class _ShardOps:
    """ordo's tensor operations for _zero1.step."""

    def __init__(self, step_shards):
        self.step_shards = step_shards

    @staticmethod
    def rows(t):
        return t.shape[0]

    @staticmethod
    def pad(t, rows):
        extra = rows - t.shape[0]
        if extra == 0:
            return t
        return _C.concat([t, _C.full([extra, *t.shape[1:]], 0, t.dtype, t._device)], 0)

    @staticmethod
    def reduce_scatter(t, scale, shard_count, groups, like):
        grad = reduce_scatter(REDUCE_SUM, t, scale=scale, scatter_dim=0, shard_count=shard_count, groups=groups)
        return grad if grad.dtype == like.dtype else _C.cast(grad, like.dtype)

    @staticmethod
    def all_reduce(tensors, scale, groups):
        all_reduce(REDUCE_SUM, tensors, scale=scale, groups=groups)

    sqrt = staticmethod(_C.sqrt)

    @staticmethod
    def at_most_one(t):
        return _C.where(t < 1, t, 1.0)

    @staticmethod
    def scale(shards, coefficient):
        for shard in shards:
            shard.grad = shard.grad * _C.cast(coefficient, shard.grad.dtype)

    @staticmethod
    def all_gather(shard, groups, like):
        return all_gather(_C.cast(shard, like.dtype), dim=0, groups=groups)

    @staticmethod
    def assign(param, gathered):
        param._assign(_C.slice(gathered, 0, 0, param.shape[0], 1))


class ZeroRedundancyOptimizer(Optimizer):
    """optimizer_class(shards, **defaults) steps the calling device's shards.

    step() is _zero1.step with average_across_groups: when there are
    several sharding groups, each is a data-parallel replica of the others
    (their shards' gradients are averaged across them), so the clipping
    norm is the global one (torch_xla's ZeroRedundancyOptimizer leaves the
    groups apart, and takes grad_norm_groups to combine their norms).

    optimizer_dtype: the dtype of the shards and of their optimizer state
    (default: each parameter's own)."""

    def __init__(self, params, optimizer_class, optimizer_dtype=None, grad_clipping=True, max_norm=1.0,
                 pin_layout=True, sharding_groups=None, **defaults):
        super().__init__(params, defaults)
        del pin_layout  # ordo has one dense layout
        self.optimizer_class = optimizer_class
        self.optimizer_dtype = None if optimizer_dtype is None else np.dtype(optimizer_dtype)
        self.grad_clipping = grad_clipping
        self.max_norm = 1.0 if max_norm is None else float(max_norm)
        self.sharding_groups = sharding_groups
        self.grad_norm = None  # the last step's global gradient norm, with grad_clipping
        self.init_zero()

    def init_zero(self):
        """Shards the parameters' current values and makes the wrapped
        optimizer over the shards (its state starts empty)."""
        self.layout = _zero1.ShardLayout(self.sharding_groups, get_ordinal(), world_size())
        self.local_world_size, self.local_rank = self.layout.size, self.layout.rank
        for p in self._params():
            if p.ndim == 0:
                raise ValueError("ZeroRedundancyOptimizer shards parameters along dim 0; a 0-d parameter has none")
        shard_groups = [dict(group, params=[self._shard(p) for p in group["params"]]) for group in self.param_groups]
        self.base_optimizer = self.optimizer_class(shard_groups, **self.defaults)
        self._sync_param_groups(self.param_groups, self.base_optimizer.param_groups)

    def _shard(self, param):
        """This device's shard of param's value, a fresh device-data tensor
        (reading param runs its pending graph, as torch_xla's unlazy)."""
        value = param.numpy()
        padded = np.zeros((self.layout.padded_rows(value.shape[0]), *value.shape[1:]), value.dtype)
        padded[:value.shape[0]] = value
        start, stop = self.layout.shard_rows(value.shape[0])
        return tensor(padded[start:stop], dtype=self.optimizer_dtype or value.dtype, device=param._device)

    @staticmethod
    def _sync_param_groups(source, target):
        for src, dst in zip(source, target):
            dst.update((k, v) for k, v in src.items() if k != "params")

    def _pairs(self):
        """(full parameter, its shard) for every parameter with a gradient."""
        return [(p, shard) for group, shards in zip(self.param_groups, self.base_optimizer.param_groups)
                for p, shard in zip(group["params"], shards["params"]) if p.grad is not None]

    def step(self, closure=None, **kwargs):
        loss = self._run_closure(closure)
        with no_grad():
            self._sync_param_groups(self.param_groups, self.base_optimizer.param_groups)

            def step_shards():
                self.base_optimizer.step(**kwargs)
                self.base_optimizer.zero_grad(set_to_none=True)

            norm = _zero1.step(self.layout, self._pairs(), _ShardOps(step_shards), grad_clipping=self.grad_clipping,
                               max_norm=self.max_norm, average_across_groups=True)
            self.grad_norm = norm if norm is not None else self.grad_norm
            self._sync_param_groups(self.base_optimizer.param_groups, self.param_groups)
        return loss

    def state_dict(self):
        """torch_xla's layout: the wrapper's state_dict (its groups), the
        shards' optimizer state under 'base_state' and every parameter's
        shape under 'shape_info'."""
        state_dict = super().state_dict()
        state_dict["base_state"] = self.base_optimizer.state_dict()["state"]
        state_dict["shape_info"] = {i: tuple(p.shape) for i, p in enumerate(self._params())}
        return state_dict

    def load_state_dict(self, state_dict):
        """Loads the groups, re-shards the parameters' current values and
        loads the shards' state (which must come from the same device's
        state_dict(), or one of the same shard)."""
        state_dict = dict(state_dict)
        base_state = state_dict.pop("base_state")
        state_dict.pop("shape_info", None)
        super().load_state_dict(state_dict)
        self.init_zero()
        self.base_optimizer.load_state_dict({"state": base_state, "param_groups": state_dict["param_groups"]})
