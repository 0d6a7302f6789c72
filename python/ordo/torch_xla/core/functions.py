"""torch_xla.core.functions over ordo: collectives that autograd
differentiates, and SyncBatchNorm. The gradient of a collective is its
transpose, as ordo's own autograd has it: a sum all_reduce's is a sum
all_reduce, an all_gather's a sum reduce_scatter (every replica's use of
the gathered tensor contributes to each shard's gradient)."""

import torch

from . import xla_model as xm


class _AllReduce(torch.autograd.Function):

    @staticmethod
    def forward(ctx, value, reduce_type, scale, groups):
        ctx.reduce_type, ctx.scale, ctx.groups = reduce_type, scale, groups
        output = xm.all_reduce(reduce_type, value, scale=scale, groups=groups)
        ctx.save_for_backward(value, output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        value, output = ctx.saved_tensors
        # Every replica's output depends on this replica's value: the
        # gradients of all replicas add up (the transpose of the reduction).
        total = xm.all_reduce(xm.REDUCE_SUM, grad_output, groups=ctx.groups)
        if ctx.reduce_type == xm.REDUCE_SUM:
            grad = total * ctx.scale if ctx.scale != 1.0 else total
        elif ctx.reduce_type == xm.REDUCE_MUL:
            # d(scale * prod) / d value = output / value (output holds the scale).
            safe = torch.where(value != 0, value, torch.ones_like(value))
            grad = torch.where(value != 0, total * output / safe, torch.zeros_like(value))
        elif ctx.reduce_type in (xm.REDUCE_MIN, xm.REDUCE_MAX):
            winner = value * ctx.scale == output if ctx.scale != 1.0 else value == output
            grad = torch.where(winner, total * ctx.scale, torch.zeros_like(total))
        else:
            raise RuntimeError(f"all_reduce: a {ctx.reduce_type!r} reduction has no gradient")
        return grad, None, None, None


def all_reduce(reduce_type, value, scale=1.0, groups=None):
    """xm.all_reduce of one tensor, differentiable."""
    return _AllReduce.apply(value, reduce_type, scale, groups)


class _AllGather(torch.autograd.Function):

    @staticmethod
    def forward(ctx, value, dim, groups):
        ctx.dim, ctx.groups = dim, groups
        ctx.count = xm.xrt_world_size() if groups is None else len(groups[0])
        return xm.all_gather(value, dim=dim, groups=groups)

    @staticmethod
    def backward(ctx, grad_output):
        grad = xm.reduce_scatter(xm.REDUCE_SUM, grad_output, 1.0, ctx.dim, ctx.count, groups=ctx.groups)
        return grad, None, None


def all_gather(value, dim=0, groups=None):
    """xm.all_gather, differentiable."""
    return _AllGather.apply(value, dim, groups)


class SyncBatchNorm(torch.nn.Module):
    """Batch norm whose batch statistics are every replica's: the per-channel
    mean and mean of squares are all_reduced (in the cc-token chain, with
    their gradient) before normalizing; the running statistics follow
    torch's BatchNorm (momentum, the unbiased variance of the whole batch)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, groups=None):
        super().__init__()
        self.num_features, self.eps, self.momentum, self.groups = num_features, eps, momentum, groups
        self.weight = torch.nn.Parameter(torch.ones(num_features))
        self.bias = torch.nn.Parameter(torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, batch):
        if not 2 <= batch.dim() <= 5 or batch.shape[1] != self.num_features:
            raise ValueError(f"SyncBatchNorm({self.num_features}): expected input of 2 to 5 dimensions with "
                             f"{self.num_features} channels, got shape {tuple(batch.shape)}")
        dims = [0] + list(range(2, batch.dim()))
        shape = [1, self.num_features] + [1] * (batch.dim() - 2)
        if self.training:
            replicas = xm.xrt_world_size() if self.groups is None else len(self.groups[0])
            count = batch.numel() // self.num_features * replicas
            stats = torch.cat([batch.mean(dim=dims), (batch * batch).mean(dim=dims)])
            stats = all_reduce(xm.REDUCE_SUM, stats, scale=1.0 / replicas, groups=self.groups)
            mean, square_mean = stats[:self.num_features], stats[self.num_features:]
            var = square_mean - mean * mean
            with torch.no_grad():
                m = self.momentum
                unbiased = var * (count / max(count - 1, 1))
                self.running_mean.copy_((1 - m) * self.running_mean + m * mean)
                self.running_var.copy_((1 - m) * self.running_var + m * unbiased)
                self.num_batches_tracked.add_(1)
        else:
            mean, var = self.running_mean, self.running_var
        inverse = torch.rsqrt(var + self.eps)
        return (batch - mean.reshape(shape)) * (inverse * self.weight).reshape(shape) + self.bias.reshape(shape)

    def extra_repr(self):
        return f"{self.num_features}, eps={self.eps}, momentum={self.momentum}"


def distributed_mm(w, x, split=1):
    """The whole weight times this replica's x, with the weight sharded by
    columns: w is this replica's N x K shard of the N x (K * world) weight
    (replica r holds its columns r*K .. r*K+K-1), x a (K * world) x M input
    of this replica's. Every replica's x is gathered by columns, each
    replica multiplies its shard by its K rows of them, and the sum of
    those products over the replicas is the whole weight times every x;
    a replica keeps its own M columns. split > 1 does this for that many
    column blocks of x in turn, which bounds the gathered size."""
    world, ordinal, shard = xm.xrt_world_size(), xm.get_ordinal(), w.size(1)
    if x.size(0) != shard * world:
        raise ValueError(f"distributed_mm: x has {x.size(0)} rows, the weight {shard} x {world} replicas columns")
    if split < 1 or x.size(1) % split != 0:
        raise ValueError(f"distributed_mm: split {split} does not divide x's {x.size(1)} columns")
    results = []
    for block in torch.split(x, x.size(1) // split, dim=1):
        gathered = all_gather(block, dim=1)
        partial = w @ torch.narrow(gathered, 0, ordinal * shard, shard)
        total = all_reduce(xm.REDUCE_SUM, partial)
        results.append(torch.narrow(total, 1, ordinal * block.size(1), block.size(1)))
    return results[0] if len(results) == 1 else torch.cat(results, dim=1)
