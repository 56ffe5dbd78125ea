"""A failure torch raises only on a compiled graph's first call (issue 34).

AOTAutograd analyses custom ops' aliasing on the first call of each compiled graph only
(`_FirstInvocationContext`); with `error_on_custom_op_aliasing` that analysis raises for an op
declared functional whose kernel returns a view of its input. Eager never runs the analysis, so
backend `eager` passes and `aot_eager` fails; a second call of the same graph passes.
"""

import sys

import torch
import torch._functorch.config

torch._functorch.config.error_on_custom_op_aliasing = True


def _register():
    lib = torch.library.Library("fxlens_first_call", "DEF")
    lib.define("flat(Tensor x) -> Tensor")  # declared functional ...
    lib.impl("flat", lambda x: x.view(-1), "CPU")  # ... but returns a view of its input
    torch.library.register_fake("fxlens_first_call::flat", lambda x: x.new_empty(x.numel()), lib=lib)
    return lib


# once per process (a test runs the script several times in one)
LIB = getattr(torch, "_fxlens_first_call_lib", None) or _register()
torch._fxlens_first_call_lib = LIB


def f(x):
    return torch.ops.fxlens_first_call.flat(x * 2) + 1


backend = sys.argv[1] if len(sys.argv) > 1 else "aot_eager"
x = torch.randn(2, 4, requires_grad=True)
out = torch.compile(f, backend=backend)(x)
print("ok", out.shape)
