"""Name and resolve torch.compile backends the way the CLI contract allows.

A spec is a registered or entry-point backend name (`inductor`, `fxlens`), `module:attr`, or
`path/to/file.py:attr`. Resolution imports torch, so it runs in the child process that runs the
user's script, never in the CLI process.
"""

from __future__ import annotations

import importlib
import inspect
import runpy
from pathlib import Path

from fxlens.errors import FxlensError


def known_names() -> list[str]:
    from torch._dynamo import list_backends

    return sorted(set(list_backends(exclude_tags=())))


def resolve(spec: str):
    """The backend for a spec: a name torch.compile accepts as is, or the callable `spec` names."""
    if ":" in spec:
        target, _, attr = spec.rpartition(":")
        if target.endswith(".py"):
            if not Path(target).is_file():
                raise FxlensError(f"backend {spec!r}: no such file {target}")
            # only the definitions the backend needs: a bug report's top-level code compares,
            # asserts and exits
            try:
                namespace = definitions_of(target, attr)
            except Exception:  # a definition needing more of the script: run all of it
                namespace = runpy.run_path(target, run_name="__fxlens_backend__")
            if attr not in namespace:
                raise FxlensError(f"backend {spec!r}: {target} defines no {attr!r}")
            return namespace[attr]
        try:
            obj = getattr(importlib.import_module(target), attr)
        except (ImportError, AttributeError) as e:
            raise FxlensError(f"backend {spec!r}: {e}") from None
        return obj
    names = known_names()
    if spec not in names:
        raise FxlensError(f"unknown backend {spec!r} (known: {', '.join(names)})")
    return spec


def definitions_of(path: str, attr: str) -> dict:
    """What a script needs to define `attr`, without running the rest of its top-level code.

    A backend in a bug-report script (which compares, asserts and exits at top level) is loaded
    in another process from the script's imports and the top-level definitions (`def`, `class`,
    assignments) that `attr` needs, transitively; other statements never run. Self-contained
    (only `ast`): reproducers embed its source.
    """
    import ast

    tree = ast.parse(open(path).read(), filename=path)
    defines: dict = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defines.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for name in ast.walk(t):
                    if isinstance(name, ast.Name):
                        defines.setdefault(name.id, []).append(node)
    needed, todo = set(), [attr]
    while todo:
        for node in defines.get(todo.pop(), []):
            if id(node) not in needed:
                needed.add(id(node))
                todo += [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
    tree.body = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom) or id(n) in needed]
    namespace: dict = {"__name__": "__fxlens_backend__", "__file__": path}
    exec(compile(tree, path, "exec"), namespace)  # the user's own definitions, as run_path would
    return namespace


def describe(backend, script: str | None = None) -> str:
    """A spec string for a backend object seen in a torch.compile call (for bisect/minify defaults)."""
    if backend is None:
        return "inductor"
    if isinstance(backend, str):
        return backend
    fn = getattr(backend, "__wrapped__", backend)
    name = getattr(fn, "__name__", None) or type(fn).__name__
    module = getattr(fn, "__module__", None)
    if module == "__main__" and script:
        return f"{script}:{name}"
    if module and module != "__main__":
        return f"{module}:{name}"
    try:
        return f"{inspect.getsourcefile(fn)}:{name}"
    except TypeError:
        return repr(backend)
