"""ordo.nn: modules and layers as PyTorch 1.13's, over ordo's lazy ops.

    model = ordo.nn.Sequential(ordo.nn.Linear(64, 128), ordo.nn.ReLU(), ordo.nn.Linear(128, 10))
    loss = ordo.nn.functional.cross_entropy(model(x), y)
    loss.backward()            # every parameter's .grad, in the same graph
"""

from . import functional, utils
from ._conv_layers import Conv1d, Conv2d
from ._layers import (GELU, Dropout, Embedding, Flatten, Identity, LayerNorm, Linear, LogSoftmax, ReLU, Sequential,
                      Sigmoid, Softmax, Tanh)
from ._losses import CrossEntropyLoss, MSELoss, NLLLoss
from ._module import Module, Parameter
from ._pool_norm import AdaptiveAvgPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d, MaxPool2d, SyncBatchNorm

__all__ = ["AdaptiveAvgPool2d", "AvgPool2d", "BatchNorm1d", "BatchNorm2d", "MaxPool2d", "SyncBatchNorm", "GELU", "Conv1d", "Conv2d", "CrossEntropyLoss", "Dropout", "Embedding", "Flatten", "Identity", "LayerNorm", "Linear",
           "LogSoftmax", "MSELoss", "Module", "NLLLoss", "Parameter", "ReLU", "Sequential", "Sigmoid", "Softmax",
           "Tanh", "functional", "utils"]
