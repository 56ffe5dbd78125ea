"""The docs table of `fxlens fix` runs (docs/guides/fix.md) from their `--json` files.

    python bench/fix_table.py NAME=fix.json [NAME=fix.json ...]

One row per fix: script, finding (shortened), fix, how, before -> after, outputs equal, verdict.
"""

from __future__ import annotations

import json
import re
import sys


def _short(text: str, n: int = 90) -> str:
    text = re.sub(r"(/[\w.+-]+)+/", "", text.split("; ")[0])  # paths: the file name only
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def _change(b: dict | None, a: dict | None) -> str:
    if not a:
        return "-"
    out = []
    for k, label in (("graphs", "graphs"), ("breaks", "breaks"), ("recompiles", "recompiles")):
        if b.get(k) != a.get(k):
            out.append(f"{label} {b[k]} → {a[k]}")
    out.append(f"compile {b['compile_s']:.1f} → {a['compile_s']:.1f} s")
    return ", ".join(out)


def main(args: list[str]) -> None:
    print("| script | finding | fix | how | before → after | outputs equal | verdict |")
    print("|---|---|---|---|---|---|---|")
    for arg in args:
        name, _, path = arg.partition("=")
        result = json.load(open(path))
        for f in result["fixes"]:
            eq = {True: "yes", False: "no", None: "-"}[f["outputs_equal"]]
            fix = _short(f["fix"], 70).replace("|", "\\|")
            finding = _short(f["finding"]).replace("|", "\\|")
            print(
                f"| {name} | {finding} | {fix} | {f['how']} | "
                f"{_change(f['before'], f['after'])} | {eq} | **{f['verdict']}** |"
            )
        t = result.get("together")
        if t:
            print(
                f"| {name} | the fixes that helped | together | - | {_change(t['before'], t['after'])} | "
                f"{ {True: 'yes', False: 'no', None: '-'}[t['outputs_equal']] } | **{t['verdict']}** |"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
