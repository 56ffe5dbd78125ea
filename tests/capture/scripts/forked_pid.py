"""A compiled function that reads os.getpid(), called again in a forked child: its recompile guards
`___stackN == <pid>`, a call's result carried across the graph break os.getpid() makes; no tensor
is read anywhere (it is not "a Python number read from a tensor")."""

import os

import torch


@torch.compile(backend="eager")
def scaled(x):
    return x * (os.getpid() % 5 + 1)  # line 12: the break and the specialised value


scaled(torch.ones(2))
pid = os.fork()
if pid == 0:
    scaled(torch.ones(2))
    os._exit(0)
os.waitpid(pid, 0)
