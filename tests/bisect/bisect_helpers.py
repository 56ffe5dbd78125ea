"""The bisect tests' scripts and line lookups (a uniquely named module: several test folders have a
conftest.py, and `from conftest import ...` resolves to whichever was imported first)."""

from pathlib import Path

SCRIPTS = Path(__file__).parent / "scripts"
MULTI = SCRIPTS / "multi.py"
MULTI_SRC = MULTI.read_text().splitlines()


def def_line(name: str, script: Path | None = None) -> int:
    """The first line of function NAME in multi.py (or SCRIPT), its decorator included
    (co_firstlineno, what the culprit's `line` names, as the report's graphs do)."""
    src = script.read_text().splitlines() if script else MULTI_SRC
    line = next(i for i, ln in enumerate(src, 1) if ln.lstrip().startswith(f"def {name}("))
    while src[line - 2].lstrip().startswith("@"):
        line -= 1
    return line
