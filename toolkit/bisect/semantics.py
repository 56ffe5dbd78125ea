"""Is an output difference between eager and a compiled graph a difference of semantics?

A graph that combines a Python scalar with a low-precision tensor (`torch.full_like(x, 0.1) * x`
in bfloat16) is computed by eager with the scalar rounded to the tensor's dtype (0.1 becomes
0.10009765625), while inductor may keep it in float32: the compiled value is then closer to fp64
than eager's, by a different function, not by rounding noise. Calling that "the script's tolerance
is tighter than bfloat16 allows" sends the user to loosen a tolerance for what is a semantics
difference.

The test: run the graph in fp64 twice, as is and with each such scalar rounded to its tensor's
dtype first; round both to the output dtype. When eager's output equals the rounded-scalar
reference at more elements than the plain one, and the compiled output the other way round, eager
rounds the scalar and the compiled code keeps it. Runs in the bisect child (imports torch lazily).
"""

from __future__ import annotations

import copy

LOW_PRECISION = ("torch.bfloat16", "torch.float16")


def round_scalars(gm) -> list[dict]:
    """Round, in place, every Python float argument of a call whose result is a low-precision
    tensor (Dynamo's `example_value` meta) to that dtype; [{op, scalar, rounded, dtype}] changed."""
    import torch

    changed = []
    for node in gm.graph.nodes:
        if node.op not in ("call_function", "call_method"):
            continue
        value = node.meta.get("example_value")
        dtype = getattr(value, "dtype", None)
        if str(dtype) not in LOW_PRECISION:
            continue

        def rounded(a, node=node, dtype=dtype):
            if type(a) is not float:
                return a
            r = float(torch.tensor(a, dtype=dtype))
            if r != a:
                name = getattr(node.target, "__name__", str(node.target))
                changed.append(
                    {"op": name, "scalar": a, "rounded": r, "dtype": str(dtype).removeprefix("torch.")}
                )
            return r

        node.args = tuple(rounded(a) for a in node.args)
        node.kwargs = {k: rounded(v) for k, v in node.kwargs.items()}
    if changed:
        gm.recompile()
    return changed


def mutates_inputs(gm) -> bool:
    """Whether the graph updates a tensor in place (its inputs' copies are then no longer pristine)."""
    for node in gm.graph.nodes:
        if node.op in ("call_function", "call_method"):
            name = getattr(node.target, "__name__", str(node.target))
            if name.endswith("_") and not name.endswith("__") or name in ("copy_", "setitem"):
                return True
    return False


def scalar_semantics(reference, refs, result) -> dict | None:
    """{what, op, scalar, rounded, dtype, eager_matches_rounded, compiled_matches_fp64} for the
    first output where eager rounds a Python scalar and the compiled graph keeps it, or None."""
    import torch

    from fxlens.bisect.fp64_compare import copy_args, flat_tensors

    if reference is None or mutates_inputs(reference):
        return None
    gm = copy.deepcopy(reference)
    changed = round_scalars(gm)
    if not changed:
        return None
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        rounded = flat_tensors(gm(*copy_args(refs.args, fp64=True)))
    outs = flat_tensors(result)
    for i, (c, e, r64, rb) in enumerate(zip(outs, refs.out, refs.out64, rounded, strict=False)):
        if str(c.dtype) not in LOW_PRECISION or c.shape != e.shape or c.dtype != e.dtype:
            continue
        plain, scaled = r64.detach().to(c.dtype), rb.detach().to(c.dtype)

        def share(x, y):
            return float((x.detach().cpu() == y.cpu()).float().mean()) if x.numel() else 0.0

        eager_rounded, eager_plain = share(e, scaled), share(e, plain)
        compiled_plain, compiled_rounded = share(c, plain), share(c, scaled)
        if eager_rounded > eager_plain and compiled_plain > compiled_rounded:
            return {
                "what": f"output {i}",
                **changed[0],
                "eager_matches_rounded": round(eager_rounded, 4),
                "compiled_matches_fp64": round(compiled_plain, 4),
            }
    return None
