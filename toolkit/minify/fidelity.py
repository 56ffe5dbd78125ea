"""Is the graph minify compiles in isolation the graph the backend saw in the script?

The capture (`fxlens.minify.capture`) records, beside each graph's code, what the backend was
given: its ops in order (mutations included: `setitem`, `index_put_`), its constants, the sizes,
strides and dtypes of its inputs, and the non-default torch config in force. `differences` compares
those with the candidate minify rebuilt from the code; when a graph that failed in the script
passes alone, the refusal names what differs instead of only "isolated: passes".
"""

from __future__ import annotations

from collections import Counter


def op_name(node) -> str:
    """A call node's op as the comparison sees it: `full`, `setitem`, `softmax`, `Linear`."""
    t = node.target
    if node.op == "call_module":
        return str(t).rsplit(".", 1)[-1]
    if isinstance(t, str):
        return t
    return getattr(t, "__name__", None) or str(t)


def graph_ops(graph) -> list[str]:
    """The ops of an FX graph's call nodes, in order."""
    return [op_name(n) for n in graph.nodes if n.op in ("call_function", "call_method", "call_module")]


def is_mutation(op: str) -> bool:
    # Python's item assignment and ATen's in-place convention (add_, index_put_, copy_)
    return op in ("setitem", "__setitem__") or (op.endswith("_") and not op.endswith("__"))


def constants(gm) -> list[str]:
    """`name: shape dtype` of the graph module's tensor attributes (get_attr targets)."""
    import torch

    out = []
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            value = gm
            for part in str(n.target).split("."):
                value = getattr(value, part, None)
            if isinstance(value, torch.Tensor):
                out.append(f"{n.target}: {tuple(value.shape)} {str(value.dtype).removeprefix('torch.')}")
    return out


def differences(meta: dict, cand, config_lines=(), baseline=()) -> list[str]:
    """What the isolated candidate lacks or changes compared with the graph the backend saw.

    Args:
        meta: the capture's `graph_k.json` (ops, inputs, config).
        cand: the candidate rebuilt from the captured code (`fxlens.minify.graph.Candidate`).
        config_lines: the config lines the reproducer sets.
        baseline: the config a fresh worker has anyway.

    Returns:
        One phrase per difference ("ops: the script's graph has setitem x1, the isolated one none"),
        empty when they agree.
    """
    found = []
    if "ops" in meta:
        seen, got = Counter(meta["ops"]), Counter(graph_ops(cand.graph))
        lost, extra = seen - got, got - seen
        if lost or extra:
            parts = []
            if lost:
                parts.append("missing " + ", ".join(f"{k} x{v}" for k, v in sorted(lost.items())))
            if extra:
                parts.append("added " + ", ".join(f"{k} x{v}" for k, v in sorted(extra.items())))
            muts = [k for k in lost if is_mutation(k)]
            kind = "ops and mutations" if muts else "ops"
            found.append(f"{kind}: the isolated graph is {'; '.join(parts)}")
    n_const = len(meta.get("constants") or [])
    if n_const and "constants" in meta:
        found.append(f"constants: the script's graph reads {n_const} tensor attribute(s), lifted to inputs")
    specs = meta.get("inputs") or []
    for i, (s, c) in enumerate(zip(specs, cand.inputs)):
        if not s.get("is_tensor", True):
            continue
        was = (tuple(s.get("shape") or ()), tuple(s.get("stride") or ()), s.get("dtype"))
        now = (tuple(c.shape), tuple(c.stride), c.dtype)
        if was != now:
            found.append(f"input {i}: size/stride/dtype {was} in the script, {now} alone")
    if len(specs) != len(cand.inputs):
        found.append(f"inputs: {len(specs)} in the script, {len(cand.inputs)} alone")
    lost_cfg = [ln for ln in meta.get("config") or [] if ln not in config_lines and ln not in baseline]
    if lost_cfg:
        found.append("config not carried: " + "; ".join(lost_cfg[:3]))
    return found
