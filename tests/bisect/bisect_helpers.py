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


# One plain python process (no fxlens) that runs a script several times, as `python SCRIPT ARGS`
# would, with a fresh Dynamo between runs: the ladder by hand, paying torch's import once.
# Each run prints "LADDER <i> <exit> <last error line>"; `disable` runs with Dynamo off, as
# TORCHDYNAMO_DISABLE=1 does.
_LADDER = r"""
import json, runpy, sys, traceback
import torch, torch._dynamo
script, runs = sys.argv[1], json.loads(sys.argv[2])
for i, (args, disable) in enumerate(runs):
    torch._dynamo.reset()
    torch._dynamo.config.disable = disable
    sys.argv = [script, *args]
    code, err = 0, ""
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException as e:
        code, err = 1, traceback.format_exception_only(type(e), e)[-1].strip()
    print(f"LADDER {i} {code} {err}", flush=True)
"""


def ladder_by_hand(script: Path, runs: list[tuple[list[str], bool]]) -> list[tuple[int, str]]:
    """[(exit code, last error line)] of `python SCRIPT *args` for each (args, dynamo disabled)."""
    import json
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", _LADDER, str(script), json.dumps(runs)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    rows = [ln.split(" ", 3) for ln in proc.stdout.splitlines() if ln.startswith("LADDER ")]
    assert len(rows) == len(runs), proc.stderr[-2000:]
    return [(int(r[2]), r[3] if len(r) > 3 else "") for r in rows]
