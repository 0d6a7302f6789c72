"""Pooling and batch norm in training, forward and forward + backward, on
the shapes of torch_xla's MNIST CNN (batch 128, 10 channels at 24x24) and
ResNet-18 (batch 8, 64 channels at 112x112 and 56x56). numpy has no such
layers: the ratio is torch's time over ordo's. A backward case runs the
forward and the input's gradient for a given output gradient."""

import numpy as np

from kernel_bench import Case

MNIST = (128, 10, 24, 24)
RESNET_STEM = (8, 64, 112, 112)
RESNET_BLOCK = (8, 64, 56, 56)


def inputs(shape, output_shape):
    def make(rng):
        return (rng.standard_normal(shape).astype(np.float32), rng.standard_normal(output_shape).astype(np.float32))
    return make


def halved(shape):
    return shape[:2] + (shape[2] // 2, shape[3] // 2)


def backward(f):
    def run(x, g):
        x.requires_grad_()
        x.grad = None
        f(x).backward(g)
        return x.grad
    return run


def torch_module():
    import torch
    return torch.nn.functional


class _OrdoFunctional:
    """ordo.nn.functional, imported at the first call: the torch child
    process loads these cases too, and must not load ordo."""

    def __getattr__(self, name):
        import ordo.nn.functional
        return getattr(ordo.nn.functional, name)


F = _OrdoFunctional()


def cases_of(name, shape, output_shape, ordo_f, torch_f):
    make = inputs(shape, output_shape)
    size = "x".join(map(str, shape))
    return [
        Case(f"{name} {size}", make, lambda x, g: ordo_f(x), None, lambda x, g: torch_f(x).detach(), target=1.0),
        Case(f"{name} bwd {size}", make, backward(ordo_f), None, backward(torch_f), target=1.0),
    ]


def bn_ordo(x):
    return F.batch_norm(x, None, None, None, None, True)


def bn_torch(x):
    return torch_module().batch_norm(x, None, None, None, None, True)


CASES = (
    cases_of("max_pool2d 2", MNIST, halved(MNIST), lambda x: F.max_pool2d(x, 2),
             lambda x: torch_module().max_pool2d(x, 2))
    + cases_of("max_pool2d 3s2p1", RESNET_STEM, halved(RESNET_STEM), lambda x: F.max_pool2d(x, 3, 2, 1),
               lambda x: torch_module().max_pool2d(x, 3, 2, 1))
    + cases_of("avg_pool2d 2", MNIST, halved(MNIST), lambda x: F.avg_pool2d(x, 2),
               lambda x: torch_module().avg_pool2d(x, 2))
    + cases_of("avg_pool2d 2", RESNET_BLOCK, halved(RESNET_BLOCK), lambda x: F.avg_pool2d(x, 2),
               lambda x: torch_module().avg_pool2d(x, 2))
    + cases_of("batch_norm", MNIST, MNIST, bn_ordo, bn_torch)
    + cases_of("batch_norm", RESNET_STEM, RESNET_STEM, bn_ordo, bn_torch)
    + cases_of("batch_norm", RESNET_BLOCK, RESNET_BLOCK, bn_ordo, bn_torch)
)
