"""The bisect tests' scripts and line lookups (a uniquely named module: several test folders have a
conftest.py, and `from conftest import ...` resolves to whichever was imported first)."""

from pathlib import Path

SCRIPTS = Path(__file__).parent / "scripts"
MULTI = SCRIPTS / "multi.py"
MULTI_SRC = MULTI.read_text().splitlines()


def def_line(name: str) -> int:
    """The first line of function NAME in multi.py, its decorator included (co_firstlineno, what
    the culprit's `line` names, as the report's graphs do)."""
    line = next(i for i, ln in enumerate(MULTI_SRC, 1) if ln.startswith(f"def {name}("))
    while MULTI_SRC[line - 2].startswith("@"):
        line -= 1
    return line
