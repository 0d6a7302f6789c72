"""ZeRO-1 written once for both front ends: ordo.optim's and torch_xla's
ZeroRedundancyOptimizer. Each device of a sharding group keeps one shard
of every parameter (dim 0, zero-padded to a multiple of the group's size)
and the wrapped optimizer's state for that shard only.

The layout (ShardLayout) and the step (step: which collectives, in which
order, with which scales, and the clipping rule) live here; a front end
passes its tensor operations (an object with the methods step() calls,
listed there) and its own optimizer of the shards."""


class ShardLayout:
    """The calling device's place among the sharding groups (None: one
    group of every device)."""

    def __init__(self, sharding_groups, ordinal, world):
        self.given = None if sharding_groups is None else [[int(d) for d in g] for g in sharding_groups]
        self.groups = self.given or [list(range(world))]
        mine = [group for group in self.groups if ordinal in group]
        if not mine:
            raise ValueError(f"Current rank {ordinal} is missing from the sharding_groups {self.groups}")
        if len({len(group) for group in self.groups}) != 1:
            raise ValueError(f"sharding groups must have one size, got {self.groups}")
        self.size = len(mine[0])
        self.rank = mine[0].index(ordinal)

    def padded_rows(self, rows):
        return -(-rows // self.size) * self.size

    def shard_rows(self, rows):
        """[start, stop) of this device's shard among the padded rows."""
        per_shard = self.padded_rows(rows) // self.size
        return self.rank * per_shard, (self.rank + 1) * per_shard

    def replica_groups(self):
        """The devices that hold the same shard, one group per shard index:
        [[0, 2], [1, 3]] for sharding groups [[0, 1], [2, 3]]."""
        return [list(group) for group in zip(*self.groups)]


def step(layout, pairs, ops, *, grad_clipping, max_norm, grad_norm_groups=None, average_across_groups=False):
    """One step over pairs of (full parameter, its shard), the parameters
    with a gradient; returns the gradients' norm (None without clipping).

    1. Each gradient, padded, is reduce_scattered (sum, scaled by 1 / the
       group's size) within the sharding group: the shard's gradient.
    2. With average_across_groups and several groups, the shards' gradients
       are averaged across the groups (one coalesced all_reduce over the
       devices holding the same shard): each group is then a data-parallel
       replica. Without it nothing crosses groups (torch_xla's meaning).
    3. With grad_clipping, every shard's gradient is scaled by
       min(1, max_norm / (norm + 1e-6)), norm the 2-norm of the shards'
       squared sums all_reduced within the sharding group, then within
       grad_norm_groups when given.
    4. ops.step_shards() steps the wrapped optimizer; each full parameter
       becomes the all_gather of its shards within the sharding group.

    ops: rows(t) (dim 0's size, 1 for a 0-d tensor), pad(t, rows),
    reduce_scatter(t, scale, shard_count, groups, like) -> the shard's
    gradient in like's dtype, all_reduce(tensors, scale, groups) (in place),
    sqrt(t), at_most_one(t), scale(shards, c)
    (each shard's gradient times c), step_shards(), all_gather(shard, groups, like) (of the shard in
    like's dtype), assign(param, gathered) (the gathered rows' first rows(param), in param's shape)."""
    for param, shard in pairs:
        padded = ops.pad(param.grad, layout.padded_rows(ops.rows(param.grad)))
        shard.grad = ops.reduce_scatter(padded, 1.0 / layout.size, layout.size, layout.given, like=shard)
    shards = [shard for _, shard in pairs]
    shard_grads = [shard.grad for shard in shards]
    if average_across_groups and len(layout.groups) > 1 and shard_grads:
        ops.all_reduce(shard_grads, 1.0 / len(layout.groups), layout.replica_groups())
    norm = None
    if grad_clipping and shard_grads:
        total = [sum((grad * grad).sum() for grad in shard_grads)]
        ops.all_reduce(total, 1.0, layout.given)
        if grad_norm_groups is not None:
            ops.all_reduce(total, 1.0, grad_norm_groups)
        norm = ops.sqrt(total[0])
        ops.scale(shards, ops.at_most_one(max_norm / (norm + 1e-6)))
    ops.step_shards()
    for param, shard in pairs:
        ops.assign(param, ops.all_gather(shard, layout.given, like=param))
    return norm
