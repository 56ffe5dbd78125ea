"""`fxlens bisect` and `fxlens minify` results as blocks to paste into a bug: the verdict, the
culprit, the reproducer (its source in a collapsible section) and the environment.

They read the result dicts only (the `--json` contracts), so `fxlens report --format markdown` on a
bisect or minify session shows the same thing as the command's own `--format`.
"""

from __future__ import annotations

from pathlib import Path

from fxlens.report.document import (
    Bold,
    Bullets,
    Code,
    Details,
    Heading,
    Para,
    Pre,
    environment_blocks,
    to_html,
    to_markdown,
)
from fxlens.report.markup import PathShortener, command_line, environment
from fxlens.trace.session import EVENTS_FILE, read_events

#: reproducer / kernel source longer than this is clipped in the report (the file has it all)
MAX_SOURCE_CHARS = 60_000


def _read(path: str | None) -> str | None:
    if not path:
        return None
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return None
    return text if len(text) <= MAX_SOURCE_CHARS else text[:MAX_SOURCE_CHARS] + "\n# ... clipped\n"


def _run_env(session: str | None) -> dict:
    """environment() of a bisect/minify session's first child run (its trace and its events)."""
    if not session:
        return environment()
    root = Path(session)
    runs = sorted(root.glob("runs/*")) + sorted(root.glob("children/*"))
    events = next((read_events(r / EVENTS_FILE)[0] for r in runs if (r / EVENTS_FILE).exists()), [])
    return environment(_logs_of(session), events)


def _logs_of(session: str | None) -> list[Path]:
    """The trace logs of a bisect/minify session's child runs (for the traced torch version)."""
    if not session:
        return []
    root = Path(session)
    return sorted(root.glob("runs/*/trace/*.log"))[:1] + sorted(root.glob("children/*/trace/*.log"))[:1]


def bisect_blocks(
    r: dict, script: str | None = None, env: dict | None = None, level: int = 2, with_env: bool = True
) -> list:
    """A bisect verdict (the `fxlens bisect --json` dict) as document blocks."""
    ps = PathShortener(script)
    name = Path(script).name if script else "script"
    out: list = [
        Heading(level, f"fxlens bisect: {name}"),
        Para(Bold(f"verdict: {ps.text(r.get('summary') or '')}")),
    ]
    facts: list = []
    if r.get("invocation") or script:  # the whole command: script arguments, -m, switches
        inv = r.get("invocation") or {"script": script, "check": r.get("check")}
        facts.append(["command: ", Code(command_line("bisect", inv, ps))])
    stages = " -> ".join(
        f"{s['stage']} {'ok' if s['ok'] else 'FAILS'}"
        for s in r.get("stages") or []
        if s["stage"] != "no_compile"
    )
    if stages:
        facts.append(["stages: ", Code(stages)])
    if r.get("failure"):
        facts.append(["failure: ", ps.text(f"{r['failure'].get('kind')}: {r['failure'].get('error')}")])
    c = r.get("culprit") or {}
    if c.get("compile_id"):
        facts.append(
            [
                "culprit graph: ",
                Code(f"{c['compile_id']} {c.get('function')} {ps.path(c.get('file'))}:{c.get('line')}"),
            ]
        )
    k = r.get("kernel") or {}
    if k.get("name"):
        facts.append(["culprit kernel: ", Code(k["name"]), " ops ", Code(", ".join(k.get("ops") or []))])
    f = r.get("fusion") or {}
    if f.get("decision"):
        facts.append(
            ["fusion decision: ", ps.text(f"{f['decision']} of {f.get('of')}: {f.get('detail') or ''}")]
        )
    cb = r.get("compiler_bisector") or {}
    if cb.get("subsystem") or cb.get("error"):
        facts.append(
            [
                "torch CompilerBisector: ",
                ps.text(
                    cb.get("error")
                    or f"{cb.get('backend')} / {cb.get('subsystem')} #{cb.get('bisect_number')}"
                ),
            ]
        )
    facts.append([f"{r.get('runs')} runs in {r.get('seconds', 0):.1f} s"])
    if r.get("next"):
        facts.append(["next: ", Code(ps.text(r["next"]))])
    out.append(Bullets(facts))
    source = _read(k.get("source_path"))
    if source:
        out.append(Details(f"kernel {k['name']} (Triton source)", [Pre(ps.text(source), "python")]))
    if with_env:
        out += environment_blocks(env or _run_env(r.get("session")))
    return out


def minify_blocks(
    r: dict, script: str | None = None, env: dict | None = None, level: int = 2, with_env: bool = True
) -> list:
    """A minify result (the `fxlens minify --json` dict) as document blocks, reproducer included."""
    ps = PathShortener(script)
    name = Path(script).name if script else "script"
    repro = r.get("repro")
    out: list = [Heading(level, f"fxlens minify: {name}")]
    state = f"reproduced {r.get('reproduced')} fresh runs" + (" (FLAKY)" if r.get("flaky") else "")
    out.append(Para(Bold(f"{r.get('check')} failure: {ps.text(r.get('signature') or '')}")))
    facts: list = [
        [
            f"{r.get('original_nodes')} -> {r.get('final_nodes')} nodes in {r.get('queries')} queries, "
            f"{r.get('seconds', 0):.1f} s; {state}"
        ],
        ["backend: ", Code(str(r.get("backend")))],
    ]
    if r.get("invocation"):
        facts.insert(0, ["command: ", Code(command_line("minify", r["invocation"], ps))])
    if r.get("level"):
        facts.append(["graph reduced: ", Code(str(r["level"]))])
    if repro:
        facts.append(
            ["reproducer: ", Code(ps.path(repro)), " (run it: ", Code(f"python {ps.path(repro)}"), ")"]
        )
    out.append(Bullets(facts))
    source = _read(repro)
    if source is not None:
        lines = source.count("\n")
        out.append(
            Details(f"reproducer {Path(repro).name} ({lines} lines)", [Pre(ps.text(source), "python")])
        )
    if with_env:
        out += environment_blocks(env or _run_env(r.get("session")))
    return out


def render(blocks: list, fmt: str, title: str) -> str:
    """Blocks as "markdown" or "html" text."""
    return to_markdown(blocks) if fmt == "markdown" else to_html(blocks, title)
