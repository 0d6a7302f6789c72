"""Adam and AdamW, as torch.optim.Adam / AdamW (1.13, the single-tensor path)."""

import math

from .. import _C
from ._optimizer import Optimizer, Scalars, no_grad


class Adam(Optimizer):
    """torch 1.13's update, operation for operation (step counts per parameter):

        grad = grad (+ weight_decay * p)                  Adam
        p = p * (1 - lr * weight_decay)                   AdamW
        exp_avg = exp_avg * beta1 + (1 - beta1) * grad
        exp_avg_sq = exp_avg_sq * beta2 + ((1 - beta2) * grad) * grad
        denom = sqrt(max or exp_avg_sq) / sqrt(1 - beta2 ** step) + eps
        p = p + (-lr / (1 - beta1 ** step)) * exp_avg / denom

    The hyperparameters and the step's bias corrections, computed on the
    host in double precision as torch does, enter the graph as 0-d tensors."""

    _decoupled_weight_decay = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 maximize=False):
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize))

    def _check_group(self, group):
        if group["lr"] < 0.0:
            raise ValueError(f"Invalid learning rate: {group['lr']}")
        if group["eps"] < 0.0:
            raise ValueError(f"Invalid epsilon value: {group['eps']}")
        for i, beta in enumerate(group["betas"]):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
        if group["weight_decay"] < 0.0:
            raise ValueError(f"Invalid weight_decay value: {group['weight_decay']}")

    def step(self, closure=None):
        loss = self._run_closure(closure)
        scalars = Scalars()
        with no_grad():
            index = 0
            for g, group in enumerate(self.param_groups):
                for p in group["params"]:
                    index += 1
                    if p.grad is not None:
                        # Group options per group; bias corrections per parameter (its own step count).
                        self._update(p, group, lambda name, value, p=p: scalars((g, name), value, p),
                                     lambda name, value, p=p, i=index: scalars((-i, name), value, p))
        return loss

    def _update(self, p, group, scalar, own_scalar):
        grad = -p.grad if group["maximize"] else p.grad
        state = self.state.setdefault(p, {})
        if not state:
            def zeros():  # one tensor each: the state's tensors are never aliases
                return _C.full(list(p.shape), 0, p.dtype, p._device)
            state.update(step=0.0, exp_avg=zeros(), exp_avg_sq=zeros())
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = zeros()
        state["step"] += 1
        beta1, beta2 = group["betas"]
        lr, weight_decay = group["lr"], group["weight_decay"]
        if weight_decay != 0:
            if self._decoupled_weight_decay:
                p._assign(p * scalar("1-lr*weight_decay", 1 - lr * weight_decay))
            else:
                grad = grad + scalar("weight_decay", weight_decay) * p
        exp_avg = state["exp_avg"] * scalar("beta1", beta1) + scalar("1-beta1", 1 - beta1) * grad
        exp_avg_sq = state["exp_avg_sq"] * scalar("beta2", beta2) + scalar("1-beta2", 1 - beta2) * grad * grad
        state.update(exp_avg=exp_avg, exp_avg_sq=exp_avg_sq)
        step = state["step"]
        step_size = lr / (1 - beta1 ** step)
        bias_correction2_sqrt = math.sqrt(1 - beta2 ** step)
        second = exp_avg_sq
        if group["amsgrad"]:
            second = state["max_exp_avg_sq"] = _C.maximum(state["max_exp_avg_sq"], exp_avg_sq)
        denom = _C.sqrt(second) / own_scalar("bias_correction2_sqrt", bias_correction2_sqrt) + scalar("eps",
                                                                                                        group["eps"])
        p._assign(p + own_scalar("-step_size", -step_size) * exp_avg / denom)


class AdamW(Adam):
    """Adam with decoupled weight decay: p = p * (1 - lr * weight_decay) first."""

    _decoupled_weight_decay = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         maximize=maximize)
