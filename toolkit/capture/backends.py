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

from fxlens.backend.stages import STAGES
from fxlens.errors import FxlensError


def known_names() -> list[str]:
    from fxlens.backend.torch_compat import list_backends

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


# names every torch and fxlens install registers: checked without importing torch (~2 s)
ALWAYS_KNOWN = frozenset({s.name for s in STAGES} | {"cudagraphs"})


def check_spec(spec: str) -> None:
    """Refuse, up front and in one line, a backend spec that cannot work, running no user code.

    A `file.py:attr` spec is read, not run: `attr` must be defined or imported at its top level.
    """
    if ":" not in spec:
        if spec not in ALWAYS_KNOWN and spec not in (names := known_names()):
            raise FxlensError(f"unknown backend {spec!r} (known: {', '.join(names)})")
        return
    target, _, attr = spec.rpartition(":")
    if not target.endswith(".py"):
        try:
            getattr(importlib.import_module(target), attr)
        except (ImportError, AttributeError) as e:
            raise FxlensError(f"backend {spec!r}: {e}") from None
        return
    if not Path(target).is_file():
        raise FxlensError(f"backend {spec!r}: no such file {target}")
    import ast

    try:
        tree = ast.parse(Path(target).read_text(errors="replace"), filename=target)
    except SyntaxError as e:
        raise FxlensError(f"backend {spec!r}: {target} line {e.lineno}: {e.msg}") from None
    if attr not in top_level_definitions(tree):
        raise FxlensError(f"backend {spec!r}: {target} defines no {attr!r}")


def top_level_definitions(tree) -> dict:
    """{name: [top-level statements that define it]} for a parsed module: `def`, `class`,
    assignments and imports, also inside a top-level `if`/`try`/`with` (`if HAS_X: def backend`),
    where the whole compound statement is what defines the name. Self-contained (only `ast`):
    reproducers embed its source."""
    import ast

    def names(node) -> set:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return {node.name}
        if isinstance(node, ast.Import | ast.ImportFrom):
            return {(a.asname or a.name).split(".")[0] for a in node.names}
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if isinstance(node, ast.If | ast.Try | ast.With):
            return {name for child in ast.iter_child_nodes(node) for name in names(child)}
        if isinstance(node, ast.ExceptHandler):
            return {name for child in node.body for name in names(child)}
        return set()

    defines: dict = {}
    for node in tree.body:
        for name in names(node):
            defines.setdefault(name, []).append(node)
    return defines


def definitions_of(path: str, attr: str) -> dict:
    """What a script needs to define `attr`, without running the rest of its top-level code.

    A backend in a bug-report script (which compares, asserts and exits at top level) is loaded
    in another process from the script's imports and the top-level definitions (`def`, `class`,
    assignments, and `if`/`try` blocks holding them) that `attr` needs, transitively; other
    statements never run. Self-contained (only `ast` and `top_level_definitions`): reproducers
    embed its source.
    """
    import ast

    tree = ast.parse(open(path).read(), filename=path)
    defines = top_level_definitions(tree)
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


def describe(backend, script: str | None = None, namespace: dict | None = None) -> str:
    """A spec string for a backend object seen in a torch.compile call (for bisect/minify defaults).

    `namespace` is the globals of the code that called torch.compile: an object the script built
    and bound to a global there (`bad = aot_autograd(...)`, whose own name is torch's
    `compiler_fn`) is named by that global, `script.py:bad`, which bisect and minify resolve again.
    """
    if backend is None:
        return "inductor"
    if isinstance(backend, str):
        return backend
    fn = getattr(backend, "__wrapped__", backend)
    name = getattr(fn, "__name__", None) or type(fn).__name__
    module = getattr(fn, "__module__", None)
    if module == "__main__" and script:
        return f"{script}:{name}"
    if script and namespace is not None and namespace.get("__name__") == "__main__":
        bound = _global_name(backend, module, name, namespace)
        if bound:
            return f"{script}:{bound}"
    if module and module != "__main__":
        return f"{module}:{name}"
    try:
        return f"{inspect.getsourcefile(fn)}:{name}"
    except TypeError:
        return repr(backend)


def _global_name(backend, module: str | None, name: str, namespace: dict) -> str | None:
    """The script's global bound to `backend`, when `module:name` does not name it (an instance)."""
    import sys

    if module and getattr(sys.modules.get(module), name, None) is backend:
        return None  # `module:name` resolves to this very object: keep the usual description
    for key, value in list(namespace.items()):
        if value is backend and not key.startswith("_"):
            return key
    return None
