"""torch_xla's ZeroRedundancyOptimizer (ZeRO-1, as of torch_xla 2.1) over
ordo: each device keeps the optimizer state of its shard of every
parameter only.

step(): each gradient (padded along dim 0 to a multiple of the sharding
group's size) is reduce_scattered (sum, scaled by 1 / group size) within
the device's sharding group; with grad_clipping the shards' gradients are
scaled by min(1, max_norm / (norm + 1e-6)), norm the 2-norm all_reduced
within the sharding group and again within grad_norm_groups when given;
the wrapped optimizer steps the shards; an all_gather within the sharding
group rebuilds every parameter. Nothing crosses sharding groups: with
several groups each is a replica of its own, as torch_xla has it (combine
them through grad_norm_groups, or average the gradients yourself)."""

import copy

import torch
from torch.optim import Optimizer

from ..core import xla_model as xm


class ZeroRedundancyOptimizer(Optimizer):

    def __init__(self, params, optimizer_class, optimizer_dtype=None, grad_clipping=True, max_norm=None,
                 pin_layout=True, sharding_groups=None, grad_norm_groups=None, lazy_init=False, **defaults):
        super().__init__(params, defaults)
        world = xm.xrt_world_size()
        self._sharding_groups = [list(range(world))] if sharding_groups is None else [list(g) for g in sharding_groups]
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
        self._sharding_groups = [list(g) for g in groups]

    def _group_of_this_device(self):
        ordinal = xm.get_ordinal()
        for group in self._sharding_groups:
            if ordinal in group:
                return group
        raise ValueError(f"ZeroRedundancyOptimizer: ordinal {ordinal} is in none of the sharding groups "
                         f"{self._sharding_groups}")

    def init_zero(self):
        """Shards the parameters' current values; the wrapped optimizer steps
        the shards (its state starts empty)."""
        group = self._group_of_this_device()
        self.local_world_size = len(group)
        self.local_rank = group.index(xm.get_ordinal())
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

    def _padded(self, tensor):
        rows = tensor.shape[0] if tensor.dim() else 1
        tensor = tensor.reshape(rows, *tensor.shape[1:]) if tensor.dim() else tensor.reshape(1)
        extra = (-rows) % self.local_world_size
        if extra:
            tensor = torch.cat([tensor, tensor.new_zeros((extra,) + tuple(tensor.shape[1:]))])
        return tensor

    def _shard(self, tensor):
        padded = self._padded(tensor)
        rows = padded.shape[0] // self.local_world_size
        return padded[self.local_rank * rows:(self.local_rank + 1) * rows]

    @torch.no_grad()
    def _clip_shards(self):
        grads = [p.grad for g in self.base_optimizer.param_groups for p in g["params"] if p.grad is not None]
        device = grads[0].device if grads else xm.xla_device()
        total = torch.zeros([], dtype=self.optimizer_dtype, device=device)
        for grad in grads:
            total = total + (grad * grad).sum()
        xm.all_reduce(xm.REDUCE_SUM, [total], groups=self._sharding_groups, pin_layout=self.pin_layout)
        if self._grad_norm_groups is not None:
            xm.all_reduce(xm.REDUCE_SUM, [total], groups=self._grad_norm_groups, pin_layout=self.pin_layout)
        coefficient = torch.clamp(self.max_norm / (torch.sqrt(total) + 1e-6), max=1.0)
        for grad in grads:
            grad.mul_(coefficient)

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
                 for p, s in zip(g["params"], sg["params"])]
        for param, shard in pairs:
            if param.grad is not None:
                grad = xm.reduce_scatter(xm.REDUCE_SUM, self._padded(param.grad), 1.0 / self.local_world_size, 0,
                                         self.local_world_size, groups=self._sharding_groups,
                                         pin_layout=self.pin_layout)
                shard.grad = grad.to(self.optimizer_dtype)
        if self.grad_clipping:
            self._clip_shards()
        self.base_optimizer.step(**kwargs)
        self.base_optimizer.zero_grad(set_to_none=True)
        for param, shard in pairs:
            if param.grad is not None:
                whole = xm.all_gather(shard.detach().to(param.dtype), dim=0, groups=self._sharding_groups,
                                      pin_layout=self.pin_layout)
                rows = param.shape[0] if param.dim() else 1
                param.copy_(whole[:rows].reshape(param.shape))
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
