"""Architecture contracts from DESIGN.md, checked on the source tree (no imports executed)."""

import ast
import subprocess
import sys
from pathlib import Path

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
        "heavy = [m for m in sys.modules if m.startswith('fxlens.') and not m.startswith('fxlens.backend')];"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_modules_stay_small():
    big = [
        f"{p.relative_to(ROOT)} ({n} lines)"
        for folder in ("toolkit", "backend", "tui")
        for p in (ROOT / folder).rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 600
    ]
    assert big == []


def test_ruff_clean():
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.exists():
        import pytest

        pytest.skip("ruff not installed (dev extra)")
    res = subprocess.run([str(ruff), "check", str(ROOT)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-3000:]
