"""The text of a kernel reproducer: one kernel, its real inputs, eager's fp64 answer, a verdict.

A kernel reproducer is a standalone script (torch and triton only, never fxlens) that holds one
generated kernel's source, loads the tensors of one launch of it (saved beside it with
`torch.save`, read back with `torch.load(weights_only=True)`), launches it once and compares what
it wrote with eager's computation of the kernel's ATen nodes in float64. It exits 1 naming the
largest error, its element and the op, or raises what the launch raises.

`HELPERS` is the part every reproducer embeds; the toolkit executes the very same text to decide
whether a launch fails (`helpers()`), so the script and `fxlens minify --kernel` agree by
construction. `reference_source` turns a kernel's FX nodes into the script's `reference(p)`.
"""

from __future__ import annotations

import math
import operator
import re
import textwrap

import torch

SIGNATURE_PREFIX = "fxlens-signature: "  # what `fxlens minify` reproducers print (repro_writer)

# Embedded verbatim in every kernel reproducer (and executed by the toolkit: `helpers()`).
HELPERS = '''
def _snap(t):
    """A copy of t with its whole storage (offset, strides and the elements between them)."""
    out = torch.empty(0, dtype=t.dtype, device=t.device)
    return out.set_(t.untyped_storage().clone(), t.storage_offset(), t.shape, t.stride())


def _on(t, dev):
    """t on device dev, with the same storage layout (a kernel indexes its storage directly)."""
    if not isinstance(t, torch.Tensor) or t.device.type == dev:
        return t
    n = t.untyped_storage().nbytes() // max(t.element_size(), 1)
    flat = torch.empty(0, dtype=t.dtype).set_(t.untyped_storage(), 0, (n,), (1,))
    return flat.to(dev).as_strided(t.shape, t.stride(), t.storage_offset())


def _f64(x):
    """Floating tensors in float64 (lists and dicts too): eager's reference precision."""
    if isinstance(x, torch.Tensor):
        return x.double() if x.is_floating_point() and x.dtype != torch.float64 else x
    if isinstance(x, (list, tuple)):
        return type(x)(_f64(v) for v in x)
    if isinstance(x, dict):
        return {k: _f64(v) for k, v in x.items()}
    return x


TOLERANCE = {torch.float16: 1e-2, torch.bfloat16: 5e-2}  # else 1e-4 (fp32/fp64), exact for integers


def compare(got, ref):
    """(ok, max abs error, its element as an index tuple, kernel value, reference value, tolerance).

    A value within tol + tol * |ref| of the fp64 reference passes; non-finite values must match."""
    ref = ref.reshape(got.shape) if ref.shape != got.shape else ref
    ref = ref.to(got.device)
    tol = TOLERANCE.get(got.dtype, 1e-4) if got.dtype.is_floating_point else 0.0
    if got.numel() == 0:
        return True, 0.0, (), None, None, tol
    if not (got.dtype.is_floating_point or got.is_complex() or ref.dtype.is_floating_point or ref.is_complex()):
        return _compare_exact(got, ref)
    g, r = got.double(), ref.double()
    err = (g - r).abs()
    finite = torch.isfinite(r) & torch.isfinite(g)
    same = (~finite) & ((g == r) | (g.isnan() & r.isnan()))
    err = torch.where(finite, err, torch.where(same, 0.0, float("inf")))
    bad = err > tol + tol * r.abs().nan_to_num(0)
    flat = int(torch.where(bad, err, -1.0).flatten().argmax()) if bool(bad.any()) else int(err.flatten().argmax())
    at = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), got.shape)) if got.dim() else ()
    return not bool(bad.any()), float(err.max()), at, g.flatten()[flat].item(), r.flatten()[flat].item(), tol


def _compare_exact(got, ref):
    """Integer and bool outputs (indices, masks, counts): equal or not, in int64 (in float64, two
    indices above 2**53 apart by one would compare equal)."""
    g, r = got.to(torch.int64), ref.to(torch.int64)
    bad = g != r
    err = (g - r).abs()
    flat = int(torch.where(bad, err, -1).flatten().argmax()) if bool(bad.any()) else 0
    at = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), got.shape)) if got.dim() else ()
    return not bool(bad.any()), float(err.max()), at, g.flatten()[flat].item(), r.flatten()[flat].item(), 0.0
'''


def mismatch(output: int, op: str, err, at, got, want) -> dict:
    """What a launch got wrong, as `fxlens minify --kernel` records it: the output, its op, the
    largest error, its element and the kernel's and eager's values there."""
    return {"output": output, "op": op, "max_abs_err": err, "element": list(at), "kernel": got, "eager": want}


def helpers() -> dict:
    """The reproducer's helper functions, executed here: what the toolkit decides with."""
    ns: dict = {"torch": torch}
    exec(compile(HELPERS, "<fxlens kernel reproducer helpers>", "exec"), ns)  # noqa: S102 - our own text
    return ns


class Unwritable(Exception):
    """A kernel's nodes hold something a standalone script cannot spell (the message says what)."""


def _target(t) -> str:
    if isinstance(t, torch._ops.OpOverload):
        return f"torch.ops.{t.namespace}.{t._opname}.{t._overloadname}"
    if t is operator.getitem:
        return "operator.getitem"
    mod = getattr(t, "__module__", "") or ""
    if mod in ("operator", "math") or mod == "torch" or mod.startswith("torch."):
        name = getattr(t, "__qualname__", getattr(t, "__name__", ""))
        if name and "<" not in name:
            return f"{'torch' if mod.startswith('torch') and hasattr(torch, name) else mod}.{name}"
    raise Unwritable(f"cannot write a call to {t!r} in a standalone script")


def render_arg(a, names: dict, consts: list, ints) -> str:
    """A node argument as Python source: nodes by their variable, tensors as saved constants `C[i]`,
    devices as the script's device `DEV`, symbolic sizes at their values in this launch (`ints`)."""
    if isinstance(a, torch.fx.Node):
        if a not in names:
            raise Unwritable(f"node {a.name} has no value in the reproducer")
        return names[a]
    if isinstance(a, (list, tuple)):
        inner = ", ".join(render_arg(x, names, consts, ints) for x in a)
        return f"[{inner}]" if isinstance(a, list) else f"({inner}{',' if len(a) == 1 else ''})"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k!r}: {render_arg(v, names, consts, ints)}" for k, v in a.items()) + "}"
    if isinstance(a, (torch.dtype, torch.layout, torch.memory_format)):
        return str(a)
    if isinstance(a, torch.device):
        return "DEV"
    if isinstance(a, bool) or a is None or isinstance(a, (int, str)):
        return repr(a)
    if isinstance(a, float):
        return repr(a) if math.isfinite(a) else f"float({str(a)!r})"
    if isinstance(a, (torch.SymInt, torch.SymFloat)):
        return repr(ints(a))
    if isinstance(a, torch.Tensor):
        consts.append(a.detach().clone())
        return f"C[{len(consts) - 1}]"
    raise Unwritable(f"cannot write the argument {a!r} ({type(a).__name__}) in a standalone script")


def reference_source(nodes, boundary, outputs, consts: list, ints, missing) -> str:
    """`def reference(p, C)`: eager's computation of `nodes` in float64 from the launch's parameters.

    Args:
        nodes: the FX nodes to evaluate, in graph order (the kernel's and those it needs).
        boundary: (node, item, param index, shape, stride, offset) of each value read from a
            parameter, at this launch's sizes.
        outputs: (node, item) of each value the kernel writes, in the order compared.
        consts: filled with the tensors the nodes use as constants (saved with the inputs).
        ints: a symbolic size -> its int in this launch.
        missing: node -> source of a stand-in (an input whose values no node reads: zeros).
    """
    names: dict = {}
    lines = [
        "def reference(p, C):",
        '    """Eager\'s computation of the kernel\'s ATen nodes, in float64."""',
    ]
    inside = set(nodes)
    multi: dict = {}
    for j, (node, item, pi, shape, stride, off) in enumerate(boundary):
        if node in inside:
            continue
        var = f"in{j}"
        lines.append(
            f"    {var} = _f64(p[{pi}].as_strided({tuple(shape)}, {tuple(stride)}, p[{pi}].storage_offset() + {off}))"
        )
        if item is None:
            names[node] = var
        else:
            multi.setdefault(node, {})[item] = var
    for node, items in multi.items():
        names[node] = f"v_{node.name}"
        lines.append(f"    v_{node.name} = {{{', '.join(f'{k}: {v}' for k, v in items.items())}}}")
    for node, src in missing.items():
        names[node] = f"v_{node.name}"
        lines.append(f"    v_{node.name} = {src}")
    for node in nodes:
        args = render_arg(tuple(node.args), names, consts, ints)
        kwargs = render_arg(dict(node.kwargs), names, consts, ints)
        call = f"{_target(node.target)}(*_f64({args}), **_f64({kwargs}))"
        if node.target is operator.getitem:
            call = f"operator.getitem(*{args})"
        names[node] = f"v_{node.name}"
        lines.append(f"    v_{node.name} = {call}  # FX node {node.name}")
    outs = [names[n] if item is None else f"{names[n]}[{item}]" for n, item in outputs]
    lines.append(f"    return [{', '.join(outs)}]")
    return "\n".join(lines) + "\n"


def _docstring(info: dict) -> str:
    rows = [
        f"fxlens kernel reproducer: {info['kernel']} ({', '.join(info.get('ops') or []) or 'no ops'})",
        "",
        f"kernel    {info['kernel']}: {info.get('what', '')}",
        f"graph     {info.get('graph')} graph of compile {info.get('compile_id') or '?'} (backend {info.get('backend')})",
        f"user line {info.get('user_line') or '(unknown)'}",
        f"failure   {info.get('failure') or '(none recorded)'}",
        f"launch    {info.get('launch_text', '')}",
        f"inputs    {info.get('inputs_name')} beside this script (torch.load(weights_only=True))",
        f"versions  {info.get('versions')}",
        f"made by   {info.get('command')}",
        "",
        *(info.get("run_text") or [
            "Run: python THIS_FILE (CPU: Triton's interpreter; CUDA when present: compiled). Exit 1 with the",
            "largest error against eager in float64, its element and the op; or the launch's own exception;",
            "exit 0 when the kernel agrees with eager. Imports torch and triton only.",
        ]),
    ]  # fmt: skip
    for note in info.get("notes") or []:
        rows.append(f"note: {note}")
    body = "\n".join(rows).replace('"""', "'''")
    return f'"""{body}\n"""\n'


_MAIN = """
def main():
    saved = torch.load(Path(__file__).with_suffix(".pt"), weights_only=True)
    params = [_on(t, DEV) for t in saved["params"]]
    consts = [_on(t, DEV) for t in saved["consts"]]
    ref = reference([_snap(t) if isinstance(t, torch.Tensor) else t for t in params], consts)
    try:
        launch(params)
    except Exception as e:  # the failing run's own exception, said in one line too
        print(f"SIGNATURE_PREFIXraise: {type(e).__name__}", file=sys.stderr)
        raise
    worst = None
    for i, ((pi, shape, stride, off, op), r) in enumerate(zip(OUTPUTS, ref)):
        got = params[pi].as_strided(shape, stride, params[pi].storage_offset() + off)
        ok, err, at, g, rv, tol = compare(got, r)
        print(f"output {i} ({op}, {got.dtype} {list(got.shape)}): max abs err {err:.3g}"
              f"{'' if ok else ' at element ' + str(at) + f': kernel {g!r}, eager fp64 {rv!r}'}")
        if not ok and worst is None:
            worst = (i, op, err, at, g, rv, tol)
    if worst is None:
        print(f"ok: {KERNEL_NAME} agrees with eager in float64")
        return 0
    i, op, err, at, g, rv, tol = worst
    print(f"FAIL: {KERNEL_NAME} output {i} ({op}): max abs err {err:.3g} at element {at}: "
          f"kernel {g!r}, eager fp64 {rv!r} (tolerance {tol:g} + {tol:g}*|eager|)", file=sys.stderr)
    print(f"SIGNATURE_PREFIXaccuracy: {KERNEL_NAME} output {i} ({op})", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
""".replace("SIGNATURE_PREFIX", SIGNATURE_PREFIX)


_MAIN_CRASH = """
def main():
    saved = torch.load(Path(__file__).with_suffix(".pt"), weights_only=True)
    params = [_on(t, DEV) for t in saved["params"]]
    consts = [_on(t, DEV) for t in saved["consts"]]
    if "--eager" in sys.argv[1:]:  # eager's ATen ops on the same inputs, in place of the kernel
        try:
            reference([_snap(t) if isinstance(t, torch.Tensor) else t for t in params], consts)
            print("eager returns")
        except Exception as e:  # a bounds check raising is what eager does: the process lives on
            print(f"eager raises {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        print(f"ok: eager's computation of {KERNEL_NAME}'s ops does not end the process")
        return 0
    # said before the launch: the launch ends the process, which then prints nothing more
    print(f"SIGNATURE_PREFIXcrash: {KERNEL_NAME} ends the process", file=sys.stderr, flush=True)
    launch(params)
    print(f"ok: {KERNEL_NAME} returned (it no longer ends the process)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
""".replace("SIGNATURE_PREFIX", SIGNATURE_PREFIX)


def no_reference(why: str) -> str:
    """`reference` for a crash reproducer whose ops a script cannot spell (`--eager` says why)."""
    return f"def reference(p, C):\n    raise RuntimeError({('no eager reference: ' + why)!r})\n"


def _tail(name: str, reference: str, outputs: list, launch_code: str, crash: bool = False) -> str:
    consts = (
        f"KERNEL_NAME = {name!r}\n"
        f"OUTPUTS = {outputs!r}  # (parameter, shape, stride, offset, op) of each value it writes\n"
    )
    return "\n".join(
        [HELPERS.strip() + "\n", reference, consts, launch_code, _MAIN_CRASH if crash else _MAIN]
    )


def triton_script(info: dict, kernel_source: str, reference: str, outputs: list, launch: dict) -> str:
    """The whole reproducer for an fxlens Triton kernel.

    Args:
        info: header facts (kernel, ops, graph, compile_id, backend, user_line, failure, ...).
        kernel_source: the kernel module's source as fxlens generated it.
        reference: `reference_source`'s text.
        outputs: (param index, shape, stride, offset, op) of each value the kernel writes.
        launch: {name, xnumel, rnumel, XBLOCK, RBLOCK, sizes: [ints]}.
    """
    head = textwrap.dedent(
        """
        import os
        import operator  # noqa: F401 - reference() may call operator.getitem
        import sys
        from pathlib import Path

        import torch

        DEV = "cuda" if torch.cuda.is_available() else "cpu"
        if DEV == "cpu":  # no CPU driver: Triton's interpreter, which must be chosen before triton loads
            os.environ["TRITON_INTERPRET"] = "1"

        import triton  # noqa: E402
        import triton.language as tl  # noqa: E402, F401
        """
    )
    # its own `import triton` lines are the head's (triton must load after TRITON_INTERPRET is set)
    own = {"import triton", "import triton.language as tl"}
    body = "\n".join(ln for ln in kernel_source.strip().splitlines() if ln.strip() not in own).strip()
    kernel = "# ---- the kernel, as fxlens generated it " + "-" * 56 + "\n" + body + "\n"
    dims = dict(
        xnumel=launch["xnumel"], rnumel=launch["rnumel"], XBLOCK=launch["XBLOCK"], RBLOCK=launch["RBLOCK"]
    )
    code = textwrap.dedent(
        f"""
        LAUNCH = {dims!r}
        SIZES = {list(launch.get("sizes") or [])!r}  # size arguments (symbolic sizes at this launch)


        def launch(params):
            \"\"\"One launch, as fxlens's wrapper does it: the buffers, the size arguments, the numels.\"\"\"
            xblock, rblock = LAUNCH["XBLOCK"], LAUNCH["RBLOCK"]
            if DEV == "cuda":  # the CPU interpreter's blocks can be too big for a GPU: any size is correct
                xblock = max(1, min(xblock, 4096 // rblock))
            grid = ((LAUNCH["xnumel"] + xblock - 1) // xblock,)
            {launch["name"]}[grid](*params, *SIZES, LAUNCH["xnumel"], LAUNCH["rnumel"], XBLOCK=xblock, RBLOCK=rblock)
        """
    )
    return "\n".join([_docstring(info), head, kernel, _tail(launch["name"], reference, outputs, code)])


def cpp_script(
    info: dict, block: str, reference: str, outputs: list, line: str, name: str, crash: bool = False
) -> str:
    """The whole reproducer for an inductor C++ kernel: its definition as the output code has it,
    loaded by inductor's own loader, and the wrapper line that launches it (`crash`: a launch that
    ends the process; `--eager` runs eager's ops on the same inputs instead)."""
    head = textwrap.dedent(
        """
        import operator  # noqa: F401 - reference() may call operator.getitem
        import sys
        from pathlib import Path

        import torch
        from torch._inductor.async_compile import AsyncCompile  # inductor's loader, as its output code uses

        DEV = "cpu"  # a C++ kernel: CPU tensors
        """
    )
    kernel = (
        "# ---- the kernel, as inductor's output code defines it " + "-" * 42 + "\n"
        "async_compile = AsyncCompile()\n"
        + block.strip()
        + "\nasync_compile.wait(globals())\ndel async_compile\n"
    )
    args = re.fullmatch(rf"{re.escape(name)}\((.*)\)", line.strip())
    names = [a.strip() for a in args.group(1).split(",") if a.strip()] if args else []
    if names and all(n.isidentifier() for n in names):
        body = f"    {', '.join(names)}, = args\n    {line.strip()}\n"
    else:
        body = f"    {name}(*args)\n"
    code = (
        "def launch(args):\n"
        '    """The line of inductor\'s wrapper (its output code\'s `call`) that launches the kernel."""\n'
        + body
    )
    return "\n".join([_docstring(info), head, kernel, _tail(name, reference, outputs, code, crash)])


def cpp_compile_error_script(info: dict, block: str) -> str:
    """A reproducer for an inductor C++ kernel that does not compile: its definition, loaded."""
    head = textwrap.dedent(
        """
        import sys

        from torch._inductor.async_compile import AsyncCompile  # inductor's loader, as its output code uses

        """
    )
    kernel = (
        "# ---- the kernel, as inductor's output code defines it " + "-" * 42 + "\n"
        "try:\n"
        + textwrap.indent(
            "async_compile = AsyncCompile()\n" + block.strip() + "\nasync_compile.wait(globals())\n", "    "
        )
        + "except Exception as e:  # the failing run's own exception, said in one line too\n"
        f'    print(f"{SIGNATURE_PREFIX}raise: {{type(e).__name__}}", file=sys.stderr)\n'
        "    raise\n"
        'print("ok: the kernel compiles")\n'
    )
    return "\n".join([_docstring(info), head, kernel])


_HELPERS_NS: dict = {}


def helpers_cache() -> dict:
    """`helpers()`, executed once per process."""
    if not _HELPERS_NS:
        _HELPERS_NS.update(helpers())
    return _HELPERS_NS


def node_closure(nodes: list, read: set, stand_in) -> tuple[list, dict, list]:
    """The nodes to evaluate for a kernel's reference: its own, and the graph's nodes computing their
    other inputs (views of a graph input, ...), in graph order; `missing` maps each input no node
    computes to the code standing in for it (`C[i]` for a constant, else `stand_in(node, input)`,
    which raises Unwritable when there is none); `consts` holds those constants."""
    inside = set(nodes)
    extra: set = set()
    missing: dict = {}
    consts: list = []
    todo = list(nodes)
    while todo:
        node = todo.pop()
        for a in node.all_input_nodes:
            if a in read or a in inside or a in extra or a in missing:
                continue
            if a.op == "call_function":
                extra.add(a)
                todo.append(a)
            elif a.op == "get_attr":
                consts.append(getattr(a.graph.owning_module, a.target).detach().clone())
                missing[a] = f"C[{len(consts) - 1}]"
            else:
                missing[a] = stand_in(node, a)
    order = {n: i for i, n in enumerate(nodes[0].graph.nodes)} if nodes else {}
    return sorted(inside | extra, key=order.__getitem__), missing, consts
