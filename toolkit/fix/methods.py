"""The methods a script calls on a compiled module instead of calling it (a VAE's `encode`/`decode`).

`torch.compile(vae)` compiles `vae.forward` and `vae.compile()` its `__call__`; a script that calls
`vae.decode(z)` runs neither, and nothing compiles. The fix compiles the methods the script calls.
Which methods those are is read from the script's source (the names bound at the torch.compile
line, then every `NAME.method(...)` call on them), not by watching the run: wrapping a model's
methods would change what Dynamo traces when forward calls them.
"""

from __future__ import annotations

import ast

# methods of torch.nn.Module itself (and Python's): moving, saving or compiling a module is not
# calling it through a method of its own
_MODULE_API = {
    "compile",
    "eval",
    "train",
    "to",
    "cuda",
    "cpu",
    "half",
    "float",
    "double",
    "bfloat16",
    "type",
    "parameters",
    "named_parameters",
    "buffers",
    "named_buffers",
    "children",
    "named_children",
    "modules",
    "named_modules",
    "state_dict",
    "load_state_dict",
    "zero_grad",
    "requires_grad_",
    "apply",
    "forward",
    "get_submodule",
    "get_parameter",
    "get_buffer",
    "share_memory",
    "extra_repr",
    "add_module",
    "register_module",
    "set_extra_state",
    "get_extra_state",
    "to_empty",
    "xpu",
    "ipu",
}


def _source(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001
        return ""


def _names_at(tree: ast.AST, line: int) -> set[str]:
    """The names that hold the compiled module after the torch.compile call on LINE:
    `m = torch.compile(model)` -> {m, model}; `model.compile()` -> {model}."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or getattr(node, "lineno", 0) > line:
            continue
        if not node.lineno <= line <= (node.end_lineno or node.lineno):
            continue
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr == "compile" and not node.args:
            names.add(_source(f.value))  # model.compile()
        elif _source(f).endswith("compile") and node.args:
            names.add(_source(node.args[0]))  # torch.compile(model)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and node.lineno <= line <= (node.end_lineno or node.lineno):
            names.update(_source(t) for t in node.targets)
    return {n for n in names if n}


def called_methods(script: str, line: int) -> list[str]:
    """The methods SCRIPT calls on the module compiled at LINE, in first-call order (not torch.nn's own)."""
    try:
        tree = ast.parse(open(script, encoding="utf-8").read())
    except (OSError, SyntaxError, ValueError):
        return []
    names = _names_at(tree, line)
    out: list[str] = []
    calls = sorted(
        (n for n in ast.walk(tree) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset)
    )
    for node in calls:
        if isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            if (
                _source(node.func.value) in names
                and attr not in _MODULE_API
                and not attr.startswith(("_", "register_"))
            ):
                if attr not in out:
                    out.append(attr)
    return out
