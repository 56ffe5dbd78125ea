"""A tiny model for the TUI tests: a graph break, a recompile, and fxlens-style kernel artifacts.

The kernel artifacts come from a stand-in backend that logs what fxlens's Triton backend logs
(`fxlens_aten_forward_graph`, one `fxlens_kernel` JSON per kernel with the ATen node names it
computes), through the backend's own `trace_log` helpers, so the TUI reads the same records.
Argument `diverge` makes this process (the second "rank") compile one more time.
"""

import sys

import torch
from torch._dynamo.backends.common import aot_autograd

from fxlens.backend.trace_log import log_artifact, log_json

torch._dynamo.config.automatic_dynamic_shapes = False


def _nbytes(node) -> int:
    val = node.meta.get("val")
    return val.numel() * val.element_size() if isinstance(val, torch.Tensor) else 0


def forward_compiler(gm, example_inputs):
    log_artifact(
        "aten_forward_graph",
        gm.print_readable(print_output=False, include_stride=True, include_device=True),
    )
    ops = [n for n in gm.graph.nodes if n.op == "call_function"]
    for i in range(0, len(ops), 2):  # two ATen nodes per "kernel", as a fusion would
        group = ops[i : i + 2]
        name = f"fxlens_k{i // 2}_" + "_".join(n.name for n in group)
        reads = sum(_nbytes(a) for n in group for a in n.all_input_nodes if a not in group)
        log_json(
            "kernel",
            {
                "graph": "forward",
                "name": name,
                "ops": [str(n.target) for n in group],
                "nodes": [n.name for n in group],
                "bytes_read": reads,
                "bytes_written": _nbytes(group[-1]),
                "source": f"@triton.jit\ndef {name}(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):\n"
                + "".join(f"    # {n.name} = {n.target}\n" for n in group)
                + "    pass\n",
                "source_path": "",
            },
        )
    return gm


backend = aot_autograd(fw_compiler=forward_compiler)


def f(x, scale):
    y = torch.relu(x) * scale
    print("between graphs")  # line 57: the graph break
    return y.sin() + 1


g = torch.compile(f, backend=backend)
with torch.no_grad():
    g(torch.randn(4, 8), 2.0)
    g(torch.randn(2, 8), 2.0)  # batch size changes: a recompile
    if "diverge" in sys.argv[1:]:
        g(torch.randn(3, 8), 2.0)
