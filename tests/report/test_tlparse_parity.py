"""docs/reference/tlparse-parity.md is generated from tlparse's inputs by docs/gen_tlparse_parity.py:
it must be current, and every row that does not agree must say why."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_parity_page_is_current_and_every_disagreement_says_why():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "gen_tlparse_parity.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [
        ln
        for ln in (ROOT / "docs" / "reference" / "tlparse-parity.md").read_text().splitlines()
        if ln.startswith("| `")
    ]
    assert len(rows) >= 30
    for row in rows:
        verdict = row.rstrip(" |").rsplit(" | ", 1)[-1]
        assert verdict == "yes" or (verdict.startswith(("n/a: ", "no: ")) and len(verdict) > 10), row
