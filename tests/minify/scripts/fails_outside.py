"""Fails only when compiled, yet outside the graph: the backend (defined here) returns correct values
in a column-major layout, and the user's own `.view()` after the call cannot handle that."""

import torch


def column_major_backend(gm, example_inputs):
    def run(*args):
        return tuple(o.t().contiguous().t() if o.dim() == 2 else o for o in gm(*args))

    return run


def model(x):
    return torch.relu(x) * 2


if __name__ == "__main__":
    out = torch.compile(model, backend=column_major_backend)(torch.randn(4, 6))
    print(out.view(24).sum())
