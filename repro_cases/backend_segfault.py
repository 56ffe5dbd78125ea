# fxlens corpus case: a backend that segfaults while compiling (a native crash, not an exception).
# fxlens minify treats a killed worker as "failed differently" unless, as here, the crash itself
# is what is being minified: its signature is then "killed by SIGSEGV".
# expect: killed by SIGSEGV
import ctypes

import torch


def segfaulting_backend(gm, example_inputs):
    if any(n.target is torch.relu for n in gm.graph.nodes):
        ctypes.string_at(0)  # read address 0: SIGSEGV, like a crashing native compiler
    return gm


class Repro(torch.nn.Module):
    def forward(self, arg0):
        return (torch.relu(arg0),)


if __name__ == "__main__":
    torch.compile(Repro(), backend=segfaulting_backend)(torch.randn(1))
