"""Write one benchmark's section of BENCHMARKS.md, leaving every other section as it is.

Every bench/*.py with `--write` calls this, so the sections of different benchmarks never clobber
each other. Run from bench/ (`python bench/X.py` puts this folder on sys.path).

Each written section gets a `Last run:` line under its heading (the command as run, the machine,
the date), and docs/benchmarks.md is regenerated from the file (docs/gen_benchmarks.py), so the
docs site shows what the notes hold.
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import runpy
import shlex
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "BENCHMARKS.md"
_STAMP = re.compile(r"^Last run: .*\n", re.M)


def machine() -> str:
    """This machine in a few words: what the numbers were measured on."""
    try:
        torch = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch = "no torch"
    parts = [
        platform.machine(),
        f"{os.cpu_count()} cores",
        f"torch {torch}",
        f"Python {platform.python_version()}",
    ]
    if "torch" in sys.modules and sys.modules["torch"].cuda.is_available():
        parts.append(sys.modules["torch"].cuda.get_device_name(0))
    else:
        parts.append("no GPU")
    return ", ".join(parts)


def stamp(command: str | None = None) -> str:
    """`Last run: `COMMAND` · MACHINE · DATE`: the command defaults to this process's own."""
    if command is None:
        script = os.path.relpath(os.path.abspath(sys.argv[0]), ROOT)
        command = shlex.join(["python", script, *sys.argv[1:]])
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    return f"Last run: `{command}` · {machine()} · {today}\n"


def _stamped(section: str, heading: str) -> str:
    """`section` (starting at its heading) with its `Last run:` line replaced or added under the heading."""
    body = _STAMP.sub("", section[len(f"## {heading}\n") :], count=1).lstrip("\n")
    return f"## {heading}\n\n{stamp()}\n{body}"


def regenerate_docs_page() -> None:
    """docs/benchmarks.md from BENCHMARKS.md (a section it cannot summarise is named on stderr)."""
    runpy.run_path(str(ROOT / "docs" / "gen_benchmarks.py"))["main"]([])


def _section(text: str, heading: str) -> re.Match | None:
    return re.search(rf"^## {re.escape(heading)}\n.*?(?=^## |\Z)", text, flags=re.M | re.S)


def write_section(heading: str, text: str, path: Path = BENCHMARKS) -> None:
    """Replace the `## heading` section with `text` (the heading is added when `text` lacks it)."""
    body = text.strip() + "\n"
    if not body.startswith(f"## {heading}\n"):
        body = f"## {heading}\n\n{body}"
    body = _stamped(body, heading)
    old = path.read_text() if path.exists() else "# Benchmarks\n"
    m = _section(old, heading)
    new = old[: m.start()] + body + "\n" + old[m.end() :] if m else old.rstrip() + "\n\n" + body
    path.write_text(new.rstrip() + "\n")
    if path == BENCHMARKS:
        regenerate_docs_page()


def write_table(heading: str, table: str, path: Path = BENCHMARKS) -> None:
    """Replace only the first Markdown table of the `## heading` section (its prose stays)."""
    old = path.read_text() if path.exists() else "# Benchmarks\n"
    m = _section(old, heading)
    if m is None:
        write_section(heading, table, path)
        return
    section = re.sub(r"(?:^\|.*\n)+", lambda _: table.rstrip("\n") + "\n", m.group(0), count=1, flags=re.M)
    path.write_text(old[: m.start()] + _stamped(section, heading) + old[m.end() :])
    if path == BENCHMARKS:
        regenerate_docs_page()
