"""Every output of `fxlens report` on every trace under tests/data, written to a folder, to diff the
outputs of two versions of fxlens (a change of representation must not change what is shown).

    python tests/report/golden.py OUT_DIR [MORE_TRACES...]    # then: diff -r OLD_DIR NEW_DIR

Per trace: text (default, `limit=3`, with `--guards`), JSON, Markdown, HTML (a fixed environment
block, so the files do not depend on the machine) and the TUI's summary sections.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from fxlens.report.build import build_report
from fxlens.report.text import render_text
from fxlens.report.command import render_guards
from fxlens.report.formats import render_html, render_markdown
from fxlens.trace.session import Session

DATA = Path(__file__).resolve().parent.parent / "data"
ENV = {"torch": "0.0", "triton": "-", "python": "3", "platform": "golden", "device": "cpu"}


def traces() -> list[Path]:
    """Each log file, and each folder that holds several (one multi-rank job)."""
    logs = sorted(p for p in DATA.rglob("*") if p.is_file() and p.suffix in (".log", ".gz", ".txt"))
    logs = [p for p in logs if p.name != "README.md"]
    multi = sorted({p.parent for p in logs if len([q for q in logs if q.parent == p.parent]) > 1})
    return logs + [d for d in multi if d.name not in ("tlparse", "guards", "inductor")]


def tui_summary(session: Session) -> str:
    from fxlens.tui.loader import load_ranks, summarise

    list(load_ranks(session))
    s = summarise(session)
    # report sections as the TUI shows them (title and lines), whatever they are made of
    lines = getattr(type(s.sections[0] if s.sections else None), "text_lines", list)
    s.sections = [lines(x) for x in s.sections]
    s.cost = [(label, getattr(type(x), "text_lines", list)(x)) for label, x in s.cost]
    return json.dumps({k: v for k, v in dataclasses.asdict(s).items() if k != "runs"}, indent=1, default=str)


def render_all(path: Path, out: Path) -> None:
    name = str(path.relative_to(DATA) if path.is_relative_to(DATA) else path.name).replace("/", "__")
    try:
        session = Session.open(path)
        report = build_report(session)
    except Exception as e:  # a trace fxlens refuses: its one-line error is the output
        (out / f"{name}.error").write_text(f"{type(e).__name__}: {e}\n")
        return
    files = {
        "txt": render_text(report),
        "limit3.txt": render_text(report, limit=3),
        "guards.txt": render_text(report) + render_guards(report),
        "json": json.dumps(report, indent=1, sort_keys=True, default=str),
        "md": render_markdown(report, session, ENV),
        "html": render_html(report, session, ENV),
        "tui.json": tui_summary(Session.open(path)),
    }
    for ext, text in files.items():
        (out / f"{name}.{ext}").write_text(text)


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for path in traces() + [Path(p).resolve() for p in sys.argv[2:]]:
        render_all(path, out)
    print(f"wrote {len(list(out.iterdir()))} files to {out}")


if __name__ == "__main__":
    main()
