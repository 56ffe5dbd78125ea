"""Whether a script (or a local module it imports) sets environment variables: such a script's
bisect runs start in new interpreters, since torch reads some variables at import, which the warm
process did before the script ran (`fxlens.bisect.forked_runs`)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

# a conservative text match: any assignment to os.environ, putenv, update/setdefault/pop
_SETS_ENV = re.compile(
    r"environ\s*\[[^\]]*\]\s*=(?!=)|environ\.(update|setdefault|pop)\(|putenv\(|environ\s*\|="
)
MAX_FILES = 500  # a script importing a whole local tree: read this many, then assume it sets some


def sets_environment(script: str, roots: list[Path] | None = None) -> str | None:
    """The first of SCRIPT and the local modules it imports, transitively, whose source assigns an
    environment variable; None when none does.

    Local modules are the `.py` files an import names under `roots` (default: the script's folder,
    which Python puts first on sys.path, and the current folder, as `-m` does) or, for a relative
    import, its package folder. Installed packages are not read. An unreadable file counts as one
    that sets variables (runs in new interpreters are never wrong, only slower).
    """
    roots = roots or [Path(script).resolve().parent, Path.cwd()]
    seen: set[Path] = set()
    todo = [Path(script).resolve()]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        if len(seen) >= MAX_FILES:
            return str(path)
        seen.add(path)
        try:
            text = path.read_text(errors="replace")
        except OSError:
            return str(path)
        if _SETS_ENV.search(text):
            return str(path)
        todo += _local_imports(text, path, roots)
    return None


def _local_imports(text: str, path: Path, roots: list[Path]) -> list[Path]:
    """Files of the local modules (and their packages' __init__.py) that `text` imports."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    found: list[Path] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found += _module_files(alias.name, roots)
        elif isinstance(node, ast.ImportFrom):
            base = _relative_base(path, node.level) if node.level else roots
            mod = node.module or ""
            for alias in node.names:  # `from pkg import mod` may name a module
                found += _module_files(f"{mod}.{alias.name}" if mod else alias.name, base)
            if mod:
                found += _module_files(mod, base)
    return found


def _relative_base(path: Path, level: int) -> list[Path]:
    """The folder `from .`, `from ..`, ... of a module at `path` import from."""
    folder = path.parent
    for _ in range(level - 1):
        folder = folder.parent
    return [folder]


def _module_files(name: str, roots: list[Path]) -> list[Path]:
    parts = name.split(".")
    files = []
    for root in roots:
        for i in range(1, len(parts) + 1):
            stem = root.joinpath(*parts[:i])
            for candidate in (stem.with_suffix(".py"), stem / "__init__.py"):
                if candidate.is_file():
                    files.append(candidate.resolve())
    return files
