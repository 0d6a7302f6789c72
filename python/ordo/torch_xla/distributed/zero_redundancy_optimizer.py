"""torch_xla's ZeroRedundancyOptimizer (ZeRO-1, as of torch_xla 2.1) over
ordo: each device keeps the optimizer state of its shard of every
parameter only. The layout and the step are ordo._zero1's, shared with
ordo's own ZeroRedundancyOptimizer; this front end runs them on torch
tensors and a torch.optim optimizer of the shards, with torch_xla's
meaning of sharding_groups: nothing crosses them (each group is a replica
of its own; grad_norm_groups adds an all_reduce of the clipping norm)."""

import copy

import torch
from torch.optim import Optimizer

from ... import _zero1
from ..core import xla_model as xm


class _ShardOps:
    """torch's tensor operations for _zero1.step, on xla tensors."""

    def __init__(self, step_shards, pin_layout):
        self.step_shards = step_shards
        self.pin_layout = pin_layout

    @staticmethod
    def rows(t):
        return t.shape[0] if t.dim() else 1

    @staticmethod
    def pad(t, rows):
        t = t.reshape(1) if t.dim() == 0 else t
        extra = rows - t.shape[0]
        return torch.cat([t, t.new_zeros((extra,) + tuple(t.shape[1:]))]) if extra else t

    def reduce_scatter(self, t, scale, shard_count, groups, like):
        grad = xm.reduce_scatter(xm.REDUCE_SUM, t, scale, 0, shard_count, groups=groups, pin_layout=self.pin_layout)
        return grad.to(like.dtype)

    def all_reduce(self, tensors, scale, groups):
        xm.all_reduce(xm.REDUCE_SUM, tensors, scale=scale, groups=groups, pin_layout=self.pin_layout)

    sqrt = staticmethod(torch.sqrt)

    @staticmethod
    def at_most_one(t):
        return torch.clamp(t, max=1.0)

    @staticmethod
    def scale(shards, coefficient):
        for shard in shards:
            shard.grad.mul_(coefficient.to(shard.grad.dtype))

    def all_gather(self, shard, groups, like):
        return xm.all_gather(shard.detach().to(like.dtype), dim=0, groups=groups, pin_layout=self.pin_layout)

    @staticmethod
    def assign(param, gathered):
        rows = param.shape[0] if param.dim() else 1
        param.copy_(gathered[:rows].reshape(param.shape))


class ZeroRedundancyOptimizer(Optimizer):

    def __init__(self, params, optimizer_class, optimizer_dtype=None, grad_clipping=True, max_norm=None,
                 pin_layout=True, sharding_groups=None, grad_norm_groups=None, lazy_init=False, **defaults):
        super().__init__(params, defaults)
        self._sharding_groups = sharding_groups
        self._grad_norm_groups = grad_norm_groups
        self.optimizer_class = optimizer_class
        self.defaults = defaults
        self.optimizer_dtype = torch.float32 if optimizer_dtype is None else optimizer_dtype
        self.grad_clipping = grad_clipping
        self.max_norm = 1.0 if max_norm is None else float(max_norm)
        self.pin_layout = pin_layout
        self.inited = False
        if not lazy_init:
            self.init_zero()

    @property
    def sharding_groups(self):
        return self._sharding_groups

    @sharding_groups.setter
    def sharding_groups(self, groups):
        if self.inited:
            raise RuntimeError("ZeroRedundancyOptimizer: sharding_groups cannot change after init_zero()")
        self._sharding_groups = groups

    def init_zero(self):
        """Shards the parameters' current values; the wrapped optimizer steps
        the shards (its state starts empty)."""
        self.layout = _zero1.ShardLayout(self._sharding_groups, xm.get_ordinal(), xm.xrt_world_size())
        self.local_world_size, self.local_rank = self.layout.size, self.layout.rank
        sharded_groups = []
        for param_group in self.param_groups:
            shards = [torch.nn.Parameter(self._shard(p.detach()).to(self.optimizer_dtype).clone(),
                                         requires_grad=p.requires_grad)
                      for p in param_group["params"]]
            sharded = copy.copy(param_group)
            sharded["params"] = shards
            sharded_groups.append(sharded)
        self.base_optimizer = self.optimizer_class(sharded_groups, **self.defaults)
        self._copy_settings(self.param_groups, self.base_optimizer.param_groups)
        self.inited = True

    @staticmethod
    def _copy_settings(source_groups, target_groups):
        """Everything of the parameter groups but the parameters (a scheduler's lr)."""
        for source, target in zip(source_groups, target_groups):
            for key, value in source.items():
                if key != "params":
                    target[key] = value

    def _shard(self, tensor):
        padded = _ShardOps.pad(tensor, self.layout.padded_rows(_ShardOps.rows(tensor)))
        start, stop = self.layout.shard_rows(_ShardOps.rows(tensor))
        return padded[start:stop]

    @torch.no_grad()
    def step(self, closure=None, **kwargs):
        if not self.inited:
            raise RuntimeError("ZeroRedundancyOptimizer: call init_zero() first (lazy_init=True)")
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self._copy_settings(self.param_groups, self.base_optimizer.param_groups)
        pairs = [(p, s) for g, sg in zip(self.param_groups, self.base_optimizer.param_groups)
                 for p, s in zip(g["params"], sg["params"]) if p.grad is not None]

        def step_shards():
            self.base_optimizer.step(**kwargs)
            self.base_optimizer.zero_grad(set_to_none=True)

        _zero1.step(self.layout, pairs, _ShardOps(step_shards, self.pin_layout), grad_clipping=self.grad_clipping,
                    max_norm=self.max_norm, grad_norm_groups=self._grad_norm_groups)
        self._copy_settings(self.base_optimizer.param_groups, self.param_groups)
        return loss

    def state_dict(self):
        state = super().state_dict()
        state["base_state"] = self.base_optimizer.state_dict()["state"]
        return state

    def load_state_dict(self, state_dict):
        state_dict = copy.deepcopy(state_dict)
        base_state = state_dict.pop("base_state")
        super().load_state_dict(state_dict)
        self.init_zero()
        base = self.base_optimizer.state_dict()
        base["state"] = base_state
        self.base_optimizer.load_state_dict(base)
