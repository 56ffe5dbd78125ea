"""A compiled function called on tensor subclass inputs, with a backend that crashes on relu
(issue 34: minify stopped with "internal error: UnpicklingError" saving them). `wrapper` passes a
wrapper subclass (torch's TwoTensor) instead of a plain-data one. Usage: subclass_input.py [wrapper]."""

import sys

import torch


class Tagged(torch.Tensor):
    """A plain-data tensor subclass (torch.Tensor.as_subclass), as libraries tag activations."""


def f(x):
    return torch.relu(x) * 2


if sys.argv[1:] == ["wrapper"]:
    from torch.testing._internal.two_tensor import TwoTensor

    x = TwoTensor(torch.randn(8), torch.randn(8))
else:
    x = torch.randn(8).as_subclass(Tagged)
out = torch.compile(f, backend="relu_compile_error_TESTING_ONLY")(x)
print(out.sum())
