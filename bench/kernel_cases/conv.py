"""conv2d forward and both gradients, float32, against torch 1.13 (whose
CPU convolutions are oneDNN's): the MNIST CNN's two convolutions (batch
128; 1 -> 10 and 10 -> 20 channels, 5 x 5, on 28 x 28 and 12 x 12) and
ResNet-18's 3 x 3 ones (batch 8; 64 channels at 56 x 56 and 128 at
28 x 28, stride 1, and the stride-2 convolutions that double the channels).

The ratio here is torch's time over ordo's (numpy has no convolution).
ordo's gradient cases trace the forward op and ask for one gradient
(ordo.grad with the output's gradient as the seed): the forward output is
dropped before mark_step, so the step runs only the gradient's op. torch's
call is aten's convolution_backward with one output asked for, what its
autograd runs."""

import numpy as np

from kernel_bench import Case

# (name, x shape, weight shape, stride, padding)
_SHAPES = [
    ("mnist 1->10 5x5 28^2 b128", (128, 1, 28, 28), (10, 1, 5, 5), 1, 0),
    ("mnist 10->20 5x5 12^2 b128", (128, 10, 12, 12), (20, 10, 5, 5), 1, 0),
    ("resnet 64->64 3x3 56^2 b8", (8, 64, 56, 56), (64, 64, 3, 3), 1, 1),
    ("resnet 64->128 3x3 56^2 s2 b8", (8, 64, 56, 56), (128, 64, 3, 3), 2, 1),
    ("resnet 128->128 3x3 28^2 b8", (8, 128, 28, 28), (128, 128, 3, 3), 1, 1),
    ("resnet 128->256 3x3 28^2 s2 b8", (8, 128, 28, 28), (256, 128, 3, 3), 2, 1),
]


def _output_shape(x_shape, w_shape, stride, padding):
    size = [(n + 2 * padding - k) // stride + 1 for n, k in zip(x_shape[2:], w_shape[2:])]
    return (x_shape[0], w_shape[0], *size)


def _inputs(x_shape, w_shape, stride, padding):
    def make(rng):
        shapes = (x_shape, w_shape, _output_shape(x_shape, w_shape, stride, padding))
        return tuple(rng.standard_normal(shape).astype(np.float32) for shape in shapes)

    return make


def _ordo_calls(stride, padding):
    import ordo
    import ordo.nn.functional as F

    def forward(x, w, g):
        return F.conv2d(x, w, stride=stride, padding=padding)

    def gradient(index):
        def call(x, w, g):
            x, w = x.detach().requires_grad_(), w.detach().requires_grad_()
            return ordo.grad(F.conv2d(x, w, stride=stride, padding=padding), [(x, w)[index]], g)[0]

        return call

    return forward, gradient(0), gradient(1)


def _torch_calls(stride, padding):
    import torch

    def forward(x, w, g):
        return torch.nn.functional.conv2d(x, w, stride=stride, padding=padding)

    def gradient(index):
        mask = (index == 0, index == 1, False)

        def call(x, w, g):
            return torch.ops.aten.convolution_backward(g, x, w, None, [stride] * 2, [padding] * 2, [1, 1], False,
                                                       [0], 1, mask)[index]

        return call

    return forward, gradient(0), gradient(1)


def _cases():
    cases = []
    for name, x_shape, w_shape, stride, padding in _SHAPES:
        ordo_calls, torch_calls = _ordo_calls(stride, padding), _torch_calls(stride, padding)
        for what, ordo_call, torch_call in zip(("fwd", "dx", "dw"), ordo_calls, torch_calls):
            cases.append(Case(f"conv2d {what} {name}", _inputs(x_shape, w_shape, stride, padding), ordo_call,
                              None, torch_call, target=1.0, reference="torch"))
    return cases


CASES = _cases()
