"""Autograd as PyTorch's: requires_grad, backward(), .grad, no_grad, grad().

    w = ordo.tensor([1.0, 2.0], requires_grad=True)
    loss = (w * w).sum()
    loss.backward()            # w.grad is 2 * w: IR in the same graph
    with ordo.no_grad():
        w.copy_(w - 0.1 * w.grad)
    ordo.mark_step()           # forward, backward and update: one graph

The backward pass is traced on the calling thread's device like any op;
ordo.Tensor's methods requires_grad, requires_grad_(), is_leaf, grad,
backward(gradient=None) and detach() come from the C++ core."""

import functools

from . import _C

is_grad_enabled = _C.is_grad_enabled


class _GradMode:
    """A context manager and decorator that sets grad mode on the calling thread."""
    enabled = False

    def __enter__(self):
        self._previous = _C.is_grad_enabled()
        _C.set_grad_enabled(self.enabled)
        return self

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._previous)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with type(self)():
                return fn(*args, **kwargs)
        return wrapped


class no_grad(_GradMode):  # noqa: N801 - torch's name
    """Ops of the calling thread record no gradient while it is active."""
    enabled = False


class enable_grad(_GradMode):  # noqa: N801 - torch's name
    """Ops of the calling thread record gradients while it is active (inside a no_grad too)."""
    enabled = True


class set_grad_enabled(_GradMode):  # noqa: N801 - torch's name
    """Grad mode on or off: at once (as a function) and, as a context manager, until it exits."""

    def __init__(self, mode):
        self._previous = _C.is_grad_enabled()
        self.enabled = bool(mode)
        _C.set_grad_enabled(self.enabled)

    def __enter__(self):
        return self


def _tensors(value):
    return [value] if isinstance(value, _C.Tensor) else list(value)


def grad(outputs, inputs, grad_outputs=None):
    """As torch.autograd.grad: the gradients of the outputs (summed) with respect to each input, as a tuple; an
    input the outputs do not depend on gets zeros. Nothing accumulates into .grad."""
    outputs, inputs = _tensors(outputs), _tensors(inputs)
    seeds = [] if grad_outputs is None else _tensors(grad_outputs)
    return tuple(_C._grad(outputs, inputs, seeds))
