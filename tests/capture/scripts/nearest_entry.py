"""Recompiles whose cache entries fail on different guards: torch lists one failed guard per entry.

Each call prints `CALL <function> <state>` (its grad mode, train/eval and input sizes), so a test can
tell, from the script's own calls, which earlier entry every recompiling call differs least from.
"""

import json

import torch

torch._dynamo.config.automatic_dynamic_shapes = False  # every new size is a new entry, as dynamic=False


def scale(x):
    return x * 2 + 1


def detect(boxes, feats):
    return feats.sum() + boxes.float().mean()


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.drop = torch.nn.Dropout(0.1)

    def forward(self, x):
        return self.drop(self.lin(x))


def call(name, fn, state, *args):
    print("CALL", name, json.dumps(state, sort_keys=True), flush=True)
    ctx = torch.enable_grad() if state.get("grad", True) else torch.no_grad()
    with ctx:
        fn(*args)


def grad_then_size():
    c = torch.compile(scale, backend="eager")
    for grad, n in [(1, 4), (1, 5), (0, 4), (1, 5), (0, 6)]:  # the last is nearest (0, 4): a size
        call("scale", c, {"grad": grad, "x": n}, torch.randn(n))


def boxes_in_train_and_eval():
    c = torch.compile(detect, backend="eager")
    f = torch.randn(2, 8)
    for grad, n in [(1, 3), (0, 3), (1, 5), (0, 5)]:  # the last is as near (1, 5) as (0, 3)
        call("detect", c, {"grad": grad, "boxes": n}, torch.zeros(n, 4), f)


def training_and_size():
    m = Net()
    c = torch.compile(m, backend="eager")
    for train, n in [(1, 2), (1, 3), (0, 2), (1, 3), (0, 5)]:  # the last is nearest (0, 2): a size
        m.train(bool(train))
        call("forward", c, {"train": train, "x": n}, torch.randn(n, 4))


grad_then_size()
boxes_in_train_and_eval()
training_and_size()
