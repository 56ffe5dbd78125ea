"""Write one benchmark's section of BENCHMARKS.md, leaving every other section as it is.

Every bench/*.py with `--write` calls this, so the sections of different benchmarks never clobber
each other. Run from bench/ (`python bench/X.py` puts this folder on sys.path).
"""

from __future__ import annotations

import re
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "BENCHMARKS.md"


def _section(text: str, heading: str) -> re.Match | None:
    return re.search(rf"^## {re.escape(heading)}\n.*?(?=^## |\Z)", text, flags=re.M | re.S)


def write_section(heading: str, text: str, path: Path = BENCHMARKS) -> None:
    """Replace the `## heading` section with `text` (the heading is added when `text` lacks it)."""
    body = text.strip() + "\n"
    if not body.startswith(f"## {heading}\n"):
        body = f"## {heading}\n\n{body}"
    old = path.read_text() if path.exists() else "# Benchmarks\n"
    m = _section(old, heading)
    new = old[: m.start()] + body + "\n" + old[m.end() :] if m else old.rstrip() + "\n\n" + body
    path.write_text(new.rstrip() + "\n")


def write_table(heading: str, table: str, path: Path = BENCHMARKS) -> None:
    """Replace only the first Markdown table of the `## heading` section (its prose stays)."""
    old = path.read_text() if path.exists() else "# Benchmarks\n"
    m = _section(old, heading)
    if m is None:
        write_section(heading, table, path)
        return
    section = re.sub(r"(?:^\|.*\n)+", lambda _: table.rstrip("\n") + "\n", m.group(0), count=1, flags=re.M)
    path.write_text(old[: m.start()] + section + old[m.end() :])
