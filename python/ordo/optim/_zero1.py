"""ZeRO-1 as torch_xla's ZeroRedundancyOptimizer: each device of a sharding
group keeps one shard of every parameter (dim 0, zero-padded to a multiple
of the group size) and the wrapped optimizer's state for that shard only."""

import numpy as np

from .. import _C
from .._collectives import REDUCE_SUM, all_gather, all_reduce, reduce_scatter
from .._devices import get_ordinal, world_size
from .._tensor import tensor
from ._optimizer import Optimizer, Scalars, no_grad


def _padded_rows(rows, count):
    return -(-rows // count) * count


def _pad(value, count):
    """value with zero rows appended to make dim 0 a multiple of count."""
    rows = value.shape[0]
    extra = _padded_rows(rows, count) - rows
    if extra == 0:
        return value
    return _C.concat([value, _C.full([extra, *value.shape[1:]], 0, value.dtype, value._device)], 0)


def _replica_groups(sharding_groups):
    """The devices that hold the same shard, one group per shard index:
    [[0, 2], [1, 3]] for sharding groups [[0, 1], [2, 3]]."""
    return [list(group) for group in zip(*sharding_groups)]


class ZeroRedundancyOptimizer(Optimizer):
    """optimizer_class(shards, **defaults) steps the calling device's shards.

    step(): the gradients are reduce_scattered (sum, scaled by 1 / group
    size) within the sharding group, and, when there are several sharding
    groups, averaged across them (one coalesced all_reduce over the devices
    holding the same shard: each sharding group is a data-parallel replica);
    with grad_clipping they are scaled by min(1, max_norm / (norm + 1e-6)),
    norm the global 2-norm (an all_reduce of the shards' squared norms);
    the wrapped optimizer steps the shards, and an all_gather puts the new
    shards together into the full parameters (rebound in place).

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
        self._given_groups = None if sharding_groups is None else [[int(d) for d in g] for g in sharding_groups]
        self.sharding_groups = self._given_groups or [list(range(world_size()))]
        self.grad_norm = None  # the last step's global gradient norm, with grad_clipping
        self.init_zero()

    def init_zero(self):
        """Shards the parameters' current values and makes the wrapped
        optimizer over the shards (its state starts empty)."""
        rank = get_ordinal()
        mine = [group for group in self.sharding_groups if rank in group]
        if not mine:
            raise ValueError(f"Current rank {rank} is missing from the sharding_groups {self.sharding_groups}")
        if len({len(group) for group in self.sharding_groups}) != 1:
            raise ValueError(f"sharding groups must have one size, got {self.sharding_groups}")
        self.local_world_size = len(mine[0])
        self.local_rank = mine[0].index(rank)
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
        rows = _padded_rows(value.shape[0], self.local_world_size)
        padded = np.zeros((rows, *value.shape[1:]), value.dtype)
        padded[:value.shape[0]] = value
        chunk = np.split(padded, self.local_world_size)[self.local_rank]
        return tensor(chunk, dtype=self.optimizer_dtype or value.dtype, device=param._device)

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
            pairs = self._pairs()
            self._reduce_gradients(pairs)
            if self.grad_clipping:
                self._clip_grad_norm([shard for _, shard in pairs])
            self.base_optimizer.step(**kwargs)
            self.base_optimizer.zero_grad(set_to_none=True)
            for p, shard in pairs:
                full = all_gather(_C.cast(shard, p.dtype), dim=0, groups=self._given_groups)
                p._assign(_C.slice(full, 0, 0, p.shape[0], 1))
            self._sync_param_groups(self.base_optimizer.param_groups, self.param_groups)
        return loss

    def _reduce_gradients(self, pairs):
        count = self.local_world_size
        for p, shard in pairs:
            grad = reduce_scatter(REDUCE_SUM, _pad(p.grad, count), scale=1.0 / count, scatter_dim=0,
                                  shard_count=count, groups=self._given_groups)
            shard.grad = grad if grad.dtype == shard.dtype else _C.cast(grad, shard.dtype)
        replicas = len(self.sharding_groups)
        if replicas > 1 and pairs:
            all_reduce(REDUCE_SUM, [shard.grad for _, shard in pairs], scale=1.0 / replicas,
                       groups=_replica_groups(self.sharding_groups))

    def _clip_grad_norm(self, shards):
        """torch_xla's clipping: the global norm from the shards' squared
        sums (all_reduced within the sharding group, whose shards make up
        every gradient once), then one coefficient for every shard."""
        if not shards:
            return
        scalars = Scalars()
        total = _C.full([], 0, shards[0].dtype, shards[0]._device)
        for shard in shards:
            total = total + (shard.grad * shard.grad).sum()
        total = all_reduce(REDUCE_SUM, total, groups=self._given_groups)
        self.grad_norm = _C.sqrt(total)
        coefficient = scalars("max_norm", self.max_norm, total) / (self.grad_norm + 1e-6)
        clip = _C.where(coefficient < 1, coefficient, 1.0)
        for shard in shards:
            shard.grad = shard.grad * _C.cast(clip, shard.grad.dtype)

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
