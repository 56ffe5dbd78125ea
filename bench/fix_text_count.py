"""The fix texts of each recompile checked by hand: for every recompile cause of a case's first run
(torch's recompiles, grouped by fxlens into causes), the fix text fxlens printed, and whether a
by-hand run of that fix (bench/fix_by_hand.py) removed that cause's recompiles.

    python bench/fix_text_count.py [--out DIR]

Reads DIR/caseN/ as bench/fix_by_hand.py left it: `s` (the first run's session), `fix.json`, and
`hand-I/hand.json` (the by-hand run of fix I). A cause's text is right by hand when a by-hand run of
one of its fixes has at least that cause's count fewer recompiles than the first run. A cause with
no fix to try (its text says the recompile is expected) is listed for a reader to judge.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fix_by_hand import CASES, PYTHON  # noqa: E402


def _report(case_dir: Path, python: str) -> dict:
    out = case_dir / "report.json"
    if not out.exists():
        subprocess.run(
            [python, "-m", "fxlens.cli", "report", "--no-guards", "--json", str(out), str(case_dir / "s")],
            capture_output=True,
            timeout=900,
            env={**os.environ},
        )
    return json.loads(out.read_text()) if out.exists() else {}


def _same(a: dict, b: dict) -> bool:
    keep = ("arg", "dim", "args", "name", "value", "block", "methods", "kwarg")
    return a["kind"] == b["kind"] and all(a["params"].get(k) == b["params"].get(k) for k in keep)


def case_rows(name: str, case_dir: Path) -> tuple[list[str], int, int, int]:
    """(rows, recompiles, recompiles whose text a by-hand run confirmed, recompiles with no fix)."""
    fix = json.loads((case_dir / "fix.json").read_text())
    base = fix["base"]["measures"]["recompiles"] if isinstance(fix.get("base"), dict) else None
    report = _report(case_dir, str(PYTHON.get(name, sys.executable)))
    rows, right, none = [], 0, 0
    for c in report.get("recompile_causes") or []:
        hands = []
        for i, f in enumerate(fix["fixes"]):
            if any(_same({"kind": f["kind"], "params": f["params"]}, a) for a in c.get("actions") or []):
                h = case_dir / f"hand-{i}" / "hand.json"
                if h.exists():
                    hands.append((f["kind"], len(json.loads(h.read_text())["recompiles"])))
        ok = [k for k, n in hands if base is not None and base - n >= c["count"]]
        if ok:
            right += c["count"]
            said = f"right: by hand, {ok[0]} removes them"
        elif not c.get("actions"):
            none += c["count"]
            said = "no fix to try (read by hand)"
        else:
            said = "not confirmed: " + (
                ", ".join(f"{k} leaves {n} of {base}" for k, n in hands) or "no by-hand run of its fixes"
            )
        text = c["fix"][:110].replace("|", "/")
        rows.append(f"| {name} | {c['message'][:70].replace('|', '/')} ({c['count']}) | {text} | {said} |")
    total = sum(c["count"] for c in report.get("recompile_causes") or [])
    return rows, total, right, none


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/fix_by_hand")
    a = ap.parse_args()
    print("| case | recompile cause (recompiles) | fix text | by hand |")
    print("|---|---|---|---|")
    totals = [0, 0, 0]
    for i, name in enumerate(CASES):
        d = Path(a.out) / f"case{i}"
        if not (d / "fix.json").exists():
            continue
        rows, total, right, none = case_rows(name, d)
        for r in rows:
            print(r)
        print(f"| {name} | {total} recompiles | | {right} right by hand, {none} with no fix to try |")
        totals = [totals[0] + total, totals[1] + right, totals[2] + none]
    print(f"\nrecompiles {totals[0]}; fix text right by hand {totals[1]}; no fix to try {totals[2]}")


if __name__ == "__main__":
    main()
