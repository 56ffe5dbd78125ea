"""Architecture contracts from DESIGN.md, checked on the source tree (no imports executed)."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _imports(folder: str) -> list[tuple[str, int, str]]:
    found = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found += [(str(path.relative_to(ROOT)), node.lineno, a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found += [(str(path.relative_to(ROOT)), node.lineno, node.module)]
    return found


def test_toolkit_and_backend_never_import_textual():
    bad = [
        f"{f}:{ln} imports {m}"
        for folder in ("toolkit", "backend")
        for f, ln, m in _imports(folder)
        if m.split(".")[0] == "textual" or m.startswith("fxlens.tui")
    ]
    assert bad == []


def test_backend_never_imports_the_toolkit():
    bad = [
        f"{f}:{ln} imports {m}"
        for f, ln, m in _imports("backend")
        if m.startswith("fxlens") and not m.startswith("fxlens.backend")
    ]
    assert bad == []


def test_backend_import_does_not_pull_in_the_toolkit():
    # torch.compile(backend="fxlens") must not pay for the toolkit (DESIGN.md)
    code = (
        "import sys, fxlens.backend.registry;"
        "heavy = [m for m in sys.modules if m.startswith('fxlens.') and not m.startswith('fxlens.backend')"
        "];"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# What each toolkit layer may import (besides itself and the foundation: fxlens, fxlens.errors,
# fxlens.config, fxlens.backend.torch_compat, the one door to private torch symbols, and
# fxlens.backend.stages, the table of compiler stages every layer reads).
# Dependencies point one way: trace <- report <- capture <- commands.
LAYERS = {
    "trace": set(),
    "report": {"trace"},
    # following a growing trace, the status line, progress of long waits
    "live": {"trace", "report"},
    "capture": {"trace", "report", "live"},
    # measuring compiled code where it runs (doctor's findings and fix --speed both read it)
    "probe": {"trace", "report", "capture", "live"},
    "bisect": {"trace", "report", "capture", "backend", "live"},
    "minify": {"trace", "report", "capture", "backend", "live"},
    "doctor": {"trace", "report", "capture", "live", "probe"},
    "fix": {"trace", "report", "capture", "live", "probe"},
    "diff": {"trace", "report"},
    "budget": {"trace", "report"},
}
# the commands: each builds on the layers below and never imports another (docs/design.md)
COMMANDS = {"bisect", "minify", "doctor", "fix", "diff", "budget"}
FOUNDATION = {
    "fxlens",
    "fxlens.errors",
    "fxlens.config",
    "fxlens.backend.torch_compat",
    "fxlens.backend.stages",
}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "fxlens" else None


def test_toolkit_layers_import_one_way():
    bad = []
    for layer, allowed in LAYERS.items():
        for f, ln, m in _imports(f"toolkit/{layer}"):
            if not m.startswith("fxlens") or m in FOUNDATION or _layer(m) in {layer, *allowed}:
                continue
            bad.append(f"{f}:{ln} imports {m} ({layer} may use {sorted(allowed) or 'nothing'})")
    assert bad == []


def test_commands_never_import_each_other():
    assert not any(COMMANDS & allowed for allowed in LAYERS.values())  # the table says so
    bad = [
        f"{f}:{ln} imports {m}"
        for layer in COMMANDS
        for f, ln, m in _imports(f"toolkit/{layer}")
        if _layer(m) in COMMANDS - {layer}
    ]
    assert bad == []


def test_every_toolkit_package_has_a_layer():
    packages = {p.name for p in (ROOT / "toolkit").iterdir() if (p / "__init__.py").is_file()}
    assert packages - {"examples"} == set(LAYERS)


def test_tui_reads_trace_and_report_only():
    # diff is pure data over reports (its Diff view shows it), like report itself; live follows a
    # trace still being written (`fxlens tui --follow`)
    bad = [
        f"{f}:{ln} imports {m}"
        for f, ln, m in _imports("tui")
        if m.startswith("fxlens")
        and m not in FOUNDATION
        and _layer(m) not in {"tui", "trace", "report", "diff", "live"}
    ]
    assert bad == []


def test_no_module_shadows_the_standard_library():
    # importing a family module named `math` binds it as an attribute of its package, where the stdlib
    # module of that name is expected; descriptive names keep both readable (issue 23)
    shadows = [
        str(p.relative_to(ROOT))
        for folder in ("toolkit", "backend", "tui")
        for p in (ROOT / folder).rglob("*.py")
        if p.stem in sys.stdlib_module_names
    ]
    assert shadows == []


def test_no_module_imports_private_names_across_modules():
    # a helper another module needs is public in its module; an underscore says "this module only"
    bad = []
    for folder in ("backend", "tui", "toolkit"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fxlens"):
                    bad += [
                        f"{path.relative_to(ROOT)}:{node.lineno} {node.module}.{a.name}"
                        for a in node.names
                        if a.name.startswith("_") and not a.name.startswith("__")
                    ]
    assert bad == []


def test_every_package_is_in_the_distribution():
    # a regular (non-editable) install ships only the packages pyproject lists: one left out (as
    # fxlens.diff once was) imports in a checkout and is missing from the wheel
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    roots = {"fxlens": "toolkit", "fxlens.backend": "backend", "fxlens.tui": "tui"}
    found = set()
    for name, folder in roots.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((name, *rel)))
    assert found == listed


def test_modules_stay_small():
    big = [
        f"{p.relative_to(ROOT)} ({n} lines)"
        for folder in ("toolkit", "backend", "tui")
        for p in (ROOT / folder).rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 600
    ]
    assert big == []


# DESIGN.md's modules of one concept, for toolkit/ and backend/: functions under 60 lines, modules
# under 450, each module opening with a docstring that says what it provides (issue 13).
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 450
SIZED_FOLDERS = ("toolkit", "backend")
SIZE_EXEMPT = ()  # every toolkit and backend folder is held to the limits


def _sized_modules():
    for folder in SIZED_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if not rel.startswith(SIZE_EXEMPT):
                yield rel, path.read_text()


def test_toolkit_and_backend_functions_and_modules_stay_small():
    too_big = []
    for rel, text in _sized_modules():
        if (n := len(text.splitlines())) > MAX_MODULE_LINES:
            too_big.append(f"{rel}: {n} lines")
        for node in ast.walk(ast.parse(text, filename=rel)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if (n := node.end_lineno - node.lineno + 1) > MAX_FUNCTION_LINES:
                    too_big.append(f"{rel}:{node.lineno} {node.name}(): {n} lines")
    assert too_big == []


def test_toolkit_and_backend_modules_open_with_a_docstring():
    bare = [rel for rel, text in _sized_modules() if not ast.get_docstring(ast.parse(text))]
    assert bare == []


def test_ruff_clean():
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.exists():
        pytest.skip("ruff not installed (dev extra)")
    res = subprocess.run([str(ruff), "check", str(ROOT)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-3000:]


def _product_modules() -> dict[str, Path]:
    """Every product module by its import name (a package by its own name, for its __init__)."""
    roots = {"toolkit": "fxlens", "backend": "fxlens.backend", "tui": "fxlens.tui"}
    found = {}
    for folder, name in roots.items():
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT / folder).with_suffix("").parts
            found[".".join((name, *(rel[:-1] if rel[-1] == "__init__" else rel)))] = path
    return found


def _runtime_imports(tree: ast.AST, modules: dict[str, Path]) -> set[str]:
    """The product modules a module imports when it runs, at the top or inside a function; an
    `if TYPE_CHECKING:` block runs never, so its imports make no circle."""
    found = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack += node.orelse
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from fxlens.minify import verify` imports the module verify, not the package
            found |= {
                f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                for a in node.names
            }
        stack += ast.iter_child_nodes(node)
    return found & set(modules)


def test_no_two_modules_import_each_other():
    # a circle kept working by an import inside a function hides which module is the lower one;
    # what both need belongs in a third module below them
    modules = _product_modules()
    edges = {m: _runtime_imports(ast.parse(p.read_text()), modules) - {m} for m, p in modules.items()}
    circles = sorted(f"{a} <-> {b}" for a in edges for b in edges[a] if a < b and a in edges[b])
    assert circles == []


def _defined_names(tree: ast.Module) -> set[str]:
    """The names a module defines at its top level (def, class, assignment, also inside a top-level
    `if`/`try`/`with`), not the names it imports; a module that serves names through a module
    `__getattr__` (torch_compat's SYMBOLS, fxlens's lazy `expect`) also defines the string keys of
    its top-level dict literals."""
    names, lazy = set(), False
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            lazy |= node.name == "__getattr__"
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            stack += node.body + getattr(node, "orelse", []) + getattr(node, "finalbody", [])
            stack += [s for h in getattr(node, "handlers", []) for s in h.body]
    if lazy:
        dicts = [n.value for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))]
        keys = [k for d in dicts if isinstance(d, ast.Dict) for k in d.keys]
        names |= {k.value for k in keys if isinstance(k, ast.Constant)}
    return names


def _exported(tree: ast.Module) -> list[str]:
    """The names a module's `__all__` lists."""
    alls = [
        n.value for n in tree.body if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "__all__"
    ]
    return [e.value for v in alls for e in getattr(v, "elts", [])]


def test_names_are_imported_from_the_module_that_defines_them():
    # a name imported into A only so that others import it from A (an "old home" kept after a move)
    # hides where it lives; importers, product and tests, name the defining module, and `__all__`
    # lists only what its module defines. Package APIs the docs promise (`fxlens.expect`,
    # `fxlens.tui.command_for`) are defined in their package.
    modules = _product_modules()
    defined = {m: _defined_names(ast.parse(p.read_text())) for m, p in modules.items()}
    bad = []
    for folder in ("toolkit", "backend", "tui", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree, rel = ast.parse(path.read_text()), path.relative_to(ROOT)
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in defined:
                    bad += [
                        f"{rel}:{node.lineno} {node.module}.{a.name}"
                        for a in node.names
                        if a.name not in defined[node.module] and f"{node.module}.{a.name}" not in modules
                    ]
            mine = _defined_names(tree)
            bad += [f"{rel} __all__ re-exports {n}" for n in _exported(tree) if n not in mine]
    assert bad == []
