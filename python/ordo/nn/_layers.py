"""The layers of ordo.nn, initialized as PyTorch 1.13's (from ordo's seeded generator)."""

import math
import warnings

import numpy as np

from .. import _C
from .._devices import _ordinal
from .._random import next_init_seed
from .._tensor import _dtype as _tensor_dtype, tensor
from . import functional as F
from ._module import Module, Parameter


def _dtype(dtype):
    return _tensor_dtype(np.float32 if dtype is None else dtype)


def _uniform(shape, bound, dtype, device):
    """U(-bound, bound) from the device's next initialization seed."""
    values = np.random.default_rng(next_init_seed(device)).uniform(-bound, bound, shape)
    return Parameter(tensor(values, dtype=_dtype(dtype), device=device))


class Linear(Module):
    """y = x @ weight.T + bias; weight (out, in) and bias U(-1/sqrt(in), 1/sqrt(in)), as torch's
    kaiming_uniform(a=sqrt(5)) and its bias rule."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        bound = 1 / math.sqrt(in_features) if in_features > 0 else 0
        self.weight = _uniform((out_features, in_features), bound, dtype, device)
        if bias:
            self.bias = _uniform((out_features,), bound, dtype, device)
        else:
            self.register_parameter("bias", None)

    def forward(self, input):  # noqa: A002
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Embedding(Module):
    """Rows of a (num_embeddings, embedding_dim) table, N(0, 1) at the start, as torch's."""

    def __init__(self, num_embeddings, embedding_dim, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        values = np.random.default_rng(next_init_seed(device)).standard_normal((num_embeddings, embedding_dim))
        self.weight = Parameter(tensor(values, dtype=_dtype(dtype), device=device))

    def forward(self, input):  # noqa: A002
        return F.embedding(input, self.weight)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}"


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape, self.eps = tuple(normalized_shape), eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            shape = list(self.normalized_shape)
            self.weight = Parameter(_C.full(shape, 1, _dtype(dtype), _ordinal(device)))
            self.bias = Parameter(_C.full(shape, 0, _dtype(dtype), _ordinal(device)))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):  # noqa: A002
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class Dropout(Module):
    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p

    def forward(self, input):  # noqa: A002
        return F.dropout(input, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"


class ReLU(Module):
    def forward(self, input):  # noqa: A002
        return F.relu(input)


class Tanh(Module):
    def forward(self, input):  # noqa: A002
        return F.tanh(input)


class Sigmoid(Module):
    def forward(self, input):  # noqa: A002
        return F.sigmoid(input)


def _legacy_softmax_dim(name, ndim):
    """torch's choice when dim is None: 0 for 0-, 1- and 3-d inputs, else 1 (with its warning)."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


class _AlongDim(Module):
    """softmax or log_softmax along dim, as torch's modules (dim None: the legacy choice)."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):  # noqa: A002
        dim = _legacy_softmax_dim(self._name, input.ndim) if self.dim is None else self.dim
        return self._function(input, dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_AlongDim):
    _name, _function = "softmax", staticmethod(F.softmax)


class LogSoftmax(_AlongDim):
    _name, _function = "log_softmax", staticmethod(F.log_softmax)


class Identity(Module):
    def __init__(self, *args, **kwargs):  # torch's takes (and ignores) any arguments
        super().__init__()

    def forward(self, input):  # noqa: A002
        return input


class Flatten(Module):
    """Dims start_dim to end_dim (negative: from the end) merged into one, as torch's."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):  # noqa: A002
        shape = list(input.shape)
        start = self.start_dim + len(shape) if self.start_dim < 0 else self.start_dim
        end = self.end_dim + len(shape) if self.end_dim < 0 else self.end_dim
        if not 0 <= start <= end < max(len(shape), 1):
            raise IndexError(f"Flatten: dims {self.start_dim} to {self.end_dim} are out of range for an input "
                             f"of shape {input.shape}")
        merged = int(np.prod(shape[start:end + 1], dtype=np.int64))
        return _C.reshape(input, shape[:start] + [merged] + shape[end + 1:])

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):  # noqa: A002
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate='{self.approximate}'"


class Sequential(Module):
    """The modules in order, named '0', '1', ... as torch's."""

    def __init__(self, *modules):
        super().__init__()
        for index, module in enumerate(modules):
            self.add_module(str(index), module)

    def forward(self, input):  # noqa: A002
        for module in self._modules.values():
            input = module(input)
        return input

    def __getitem__(self, index):
        return list(self._modules.values())[index]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())
