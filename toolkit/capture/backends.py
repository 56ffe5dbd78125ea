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
            # a backend the file defines with `def`: its definitions alone, since a bug report's
            # top-level code compares, asserts and exits; one built at top level needs the file run
            try:
                namespace = definitions_of(target)
            except Exception:  # a decorator or default argument needing the script's globals
                namespace = {}
            if attr not in namespace:
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


def definitions_of(path: str) -> dict:
    """A script's imports, functions and classes, without running its top-level code.

    A backend defined in a bug-report script (which compares, asserts and exits at top level)
    can be loaded this way in another process; its body still sees the script's imports.
    """
    import ast

    tree = ast.parse(Path(path).read_text(), filename=path)
    kinds = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    tree.body = [node for node in tree.body if isinstance(node, kinds)]
    namespace: dict = {"__name__": "__fxlens_backend__", "__file__": path}
    exec(compile(tree, path, "exec"), namespace)  # noqa: S102 - the user's own script, as run_path would
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
