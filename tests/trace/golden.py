"""Render every trace under tests/data as fxlens shows it, to compare two versions of the code.

    python tests/trace/golden.py write /tmp/golden-before     # on the old code
    python tests/trace/golden.py write /tmp/golden-after      # on the new code
    python tests/trace/golden.py compare /tmp/golden-before /tmp/golden-after

Per trace (each log file, each folder of rank logs; gzipped fixtures unpacked to one fixed folder so
paths stay the same between runs): the text report (with --guards), the JSON report, Markdown,
HTML, the model each rank was read into (every list, as its repr), and the TUI's index and summary
(labels, artifacts, cleaned strings). Not a test: a tool for a change that must keep outputs.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import sys
from contextlib import redirect_stderr
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
UNPACKED = Path("/tmp/fxlens-golden-inputs")
os.environ.setdefault("FXLENS_READ_JOBS", "1")  # the same reader path for every trace


def traces() -> list[tuple[str, Path]]:
    """(name, path) of every log and every folder of logs under tests/data."""
    out = []
    for p in sorted(DATA.rglob("*")):
        rel = p.relative_to(DATA).as_posix()
        if p.is_file() and p.suffix == ".gz":
            dest = UNPACKED / rel.removesuffix(".gz")
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(gzip.decompress(p.read_bytes()))
            out.append((rel, dest))
        elif p.is_file() and p.suffix in (".log", ".txt"):
            out.append((rel, p))
    folders = sorted({p.parent for _, p in out if len(list(p.parent.glob("*.log"))) > 1})
    for folder in folders:
        rel = folder.relative_to(UNPACKED if folder.is_relative_to(UNPACKED) else DATA).as_posix()
        out.append((rel + "/", folder))
    return out


def _model_dump(session) -> str:
    lines = []
    for m in session.ranks:
        for name, value in sorted(vars(m).items()):
            if name == "by_compile":
                value = {k: [(r.kind, r.line_no, r.payload_span) for r in v] for k, v in value.items()}
            lines.append(f"{name}: {value!r}")
    return "\n".join(lines) + "\n"


def _tui_dump(path: Path) -> str:
    from fxlens.trace.session import Session
    from fxlens.tui.loader import load_ranks, summarise

    session = Session.open(path)
    out = []
    for entry in load_ranks(session):
        out.append(entry.label)
        for frame in entry.frames:
            out.append(f"  {frame.label} {frame.outcome}")
            for c in frame.compiles:
                arts = [(label, rec.kind) for label, rec in c.artifacts()]
                out.append(f"    {c.compile_id} {c.outcome} {c.tags} {arts}")
    out.append(repr(summarise(session)))
    out.append(_model_dump(session))  # the models as the TUI cleaned them
    return "\n".join(out) + "\n"


def render(path: Path) -> dict[str, str]:
    """Every output of one trace, by file suffix; a trace fxlens refuses gives its one-line error."""
    from fxlens.errors import FxlensError
    from fxlens.report.build import build_report
    from fxlens.report.command import render_guards
    from fxlens.report.formats import render_html, render_markdown
    from fxlens.report.text import render_text
    from fxlens.trace.session import Session

    try:
        session = Session.open(path)
        session.check_not_empty()
    except FxlensError as e:
        return {"error": str(e) + "\n"}
    report = build_report(session)
    return {
        "txt": render_text(report) + render_guards(report),
        "json": json.dumps(report, indent=1, default=str) + "\n",
        "md": render_markdown(report, session),
        "html": render_html(report, session),
        "model": _model_dump(session),
        "tui": _tui_dump(path),
    }


def write(dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for name, path in traces():
        with redirect_stderr(io.StringIO()):
            outs = render(path)
        for suffix, text in outs.items():
            (dest / f"{name.replace('/', '__')}.{suffix}").write_text(text)
        print(f"{name}: {', '.join(outs)}")


def compare(a: Path, b: Path) -> int:
    names = sorted({p.name for p in a.iterdir()} | {p.name for p in b.iterdir()})
    differ = [
        n
        for n in names
        if not (a / n).exists() or not (b / n).exists() or (a / n).read_bytes() != (b / n).read_bytes()
    ]
    for n in differ:
        print(f"differs: {n}")
    print(f"{len(names) - len(differ)} of {len(names)} outputs identical")
    return 1 if differ else 0


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    if cmd == "write":
        write(Path(args[0]))
    else:
        sys.exit(compare(Path(args[0]), Path(args[1])))
