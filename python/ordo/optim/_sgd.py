"""SGD with momentum, dampening, weight decay and Nesterov, as torch.optim.SGD (1.13)."""

from ._optimizer import Optimizer, Scalars, clone, no_grad, required


class SGD(Optimizer):
    """torch 1.13's update, operation for operation:

        d_p = grad (+ weight_decay * p)
        buf = d_p on the first step, else momentum * buf + (1 - dampening) * d_p
        d_p = d_p + momentum * buf if nesterov else buf
        p = p + (-lr) * d_p

    Every hyperparameter enters the graph as a 0-d tensor (see Scalars)."""

    def __init__(self, params, lr=required, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False):
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize))

    def _check_group(self, group):
        for name in ("lr", "momentum", "weight_decay"):
            if group[name] < 0.0:
                raise ValueError(f"Invalid {name} value: {group[name]}")
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")

    def step(self, closure=None):
        loss = self._run_closure(closure)
        scalars = Scalars()
        with no_grad():
            for g, group in enumerate(self.param_groups):
                for p in group["params"]:
                    if p.grad is not None:
                        self._update(p, group, lambda name, value, p=p: scalars((g, name), value, p))
        return loss

    def _update(self, p, group, scalar):
        d_p = -p.grad if group["maximize"] else p.grad
        if group["weight_decay"] != 0:
            d_p = d_p + scalar("weight_decay", group["weight_decay"]) * p
        state = self.state.setdefault(p, {})
        momentum = group["momentum"]
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = clone(d_p)
            else:
                buf = buf * scalar("momentum", momentum) + scalar("1-dampening", 1 - group["dampening"]) * d_p
            state["momentum_buffer"] = buf
            d_p = d_p + scalar("momentum", momentum) * buf if group["nesterov"] else buf
        else:
            state["momentum_buffer"] = None
        p._assign(p + scalar("-lr", -group["lr"]) * d_p)
