"""Graph breaks (deduplicated, with hints and the user's source) and recompiles by root cause."""

from __future__ import annotations

from fxlens.report.ranks import rank_ranges
from fxlens.trace.sanitize import for_terminal, read_display_text
from fxlens.trace.userframes import location
from fxlens.tui.safe import escape
from fxlens.tui.view_list import ListView


def source_around(file: str, line: int, context: int = 3, fallback: str = "") -> str:
    """Markup for the user's source around `line` (the line itself highlighted).

    Reads the file as text only; when it is gone (a trace from another machine) the line torch
    logged is shown instead.
    """
    # a regular file only: the trace may name a FIFO or /dev/zero; shown with controls escaped
    lines = for_terminal(read_display_text(file) or "").split("\n") if file else []
    if not lines or line <= 0 or line > len(lines):
        return f"  [b]{line:>5}[/b] {escape(fallback)}" if fallback else "  (source not available)"
    out = []
    for n in range(max(1, line - context), min(len(lines), line + context) + 1):
        text = escape(lines[n - 1])
        out.append(f"[reverse] ▶{n:>4} {text} [/reverse]" if n == line else f"  [dim]{n:>4}[/dim] {text}")
    return "\n".join(out)


class BreaksView(ListView):
    """Graph breaks, deduplicated by location and reason; the detail has hints and source.

    Params: key (the break's index), filter.
    """

    view_id = "breaks"
    title = "Breaks"
    columns = ("count", "where", "function", "reason")
    priority = ("reason", "where", "function", "count")
    empty = "No graph breaks: every compiled frame was captured whole."

    def rows(self):
        out = []
        for i, b in enumerate(self.data.summary.breaks if self.data.summary else []):
            where = location(b["file"], b["line"])
            cells = (str(b["count"]), where, b["function"], b["reason"])
            out.append((str(i), cells, f"{where} {b['function']} {b['reason']} {b['explanation']}"))
        return out

    def key_for(self, compile_id: str) -> str | None:
        """The row of the break that `compile_id` hit."""
        for i, b in enumerate(self.data.summary.breaks if self.data and self.data.summary else []):
            if compile_id in b["compile_ids"]:
                return str(i)
        return None

    def detail(self, key: str) -> str:
        b = self.data.summary.breaks[int(key)]
        code = b["call_path"][-1]["code"] if b["call_path"] else b["source"]
        parts = [
            f"[b]{escape(b['reason'])}[/b]  ×{b['count']}  at [b]{escape(location(b['file'], b['line']))}[/b]"
            f" in {escape(b['function'])}",
            f"compile ids: {escape(', '.join(b['compile_ids']))}"
            + (f" · ranks {escape(rank_ranges(b['ranks'], limit=6))}" if b["ranks"] != [None] else ""),
            "",
            source_around(b["file"], b["line"], fallback=code),
            "",
        ]
        if b["explanation"]:
            parts += [f"[b]why[/b]  {escape(b['explanation'])}", ""]
        for h in b["hints"]:
            parts.append(f"[green]hint[/green]  {escape(h)}")
        if len(b["call_path"]) > 1:
            path = " → ".join(f"{f['function']}:{f['line']}" for f in b["call_path"])
            parts += ["", f"[b]call path[/b]  {escape(path)}"]
        if b["url"]:
            parts += ["", f"[dim]{escape(b['url'])}[/dim]"]
        return "\n".join(parts)


class RecompilesView(ListView):
    """Recompiles grouped by root cause with the fix; frames that hit the recompile limit.

    Params: key ("c<i>" for a cause, "l<i>" for a limit hit), filter.
    """

    view_id = "recompiles"
    title = "Recompiles"
    columns = ("recompiles", "function", "where", "cause")
    priority = ("cause", "function", "recompiles", "where")
    empty = "No recompiles: every frame compiled once per shape it saw."

    def rows(self):
        s = self.data.summary
        out = []
        for i, c in enumerate(s.causes if s else []):
            where = location(c["file"], c["line"])
            out.append(
                (
                    f"c{i}",
                    (str(c["count"]), c["function"], where, c["message"]),
                    f"{where} {c['function']} {c['message']} {c['kind']}",
                )
            )
        for i, h in enumerate(s.limit_hits if s else []):
            where = location(h["file"], h["line"])
            msg = f"hit {h['limit_type']}={h['limit']}: runs EAGERLY from then on"
            out.append((f"l{i}", ("limit", h["function"], where, msg), f"{where} {h['function']} {msg}"))
        for i, sp in enumerate(s.specializations if s else []):  # a dynamic dim fixed to one value
            at = (sp["user_stack"] or sp["stack"] or [{"file": "", "line": 0}])[-1]
            where = location(at["file"], at["line"])
            msg = f"specialised {', '.join(sp['sources']) or sp['symbol']} = {sp['value']} ({sp['reason']})"
            out.append((f"s{i}", ("spec", sp["function"], where, msg), f"{where} {sp['function']} {msg}"))
        return out

    def key_for(self, compile_id: str) -> str | None:
        """The cause row that explains `compile_id`."""
        s = self.data.summary if self.data else None
        for i, h in enumerate(s.limit_hits if s else []):
            if h["compile_id"] == compile_id:
                return f"l{i}"
        for i, c in enumerate(s.causes if s else []):
            if compile_id in c["compile_ids"]:
                return f"c{i}"
        return None

    def detail(self, key: str) -> str:
        s = self.data.summary
        if key.startswith("s"):
            return _specialization_detail(s.specializations[int(key[1:])])
        if key.startswith("l"):
            h = s.limit_hits[int(key[1:])]
            return (
                f"[b magenta]{escape(h['function'])} hit torch's {escape(h['limit_type'])} "
                f"({h['limit']})[/b magenta] at compile {escape(h['compile_id'])}\n\n"
                "From then on this frame runs eagerly, silently: the compiled speedup is gone.\n"
                "[green]fix[/green]  find what changes between calls in the causes above (a Python value, "
                "a shape) and make it static or dynamic; raising torch._dynamo.config.recompile_limit "
                "only hides it."
            )
        c = s.causes[int(key[1:])]
        values = ", ".join(map(str, c["values"]))
        return "\n".join(
            [
                f"[b]{escape(c['message'])}[/b]",
                f"{escape(c['function'])} at {escape(location(c['file'], c['line']))} · kind {escape(c['kind'])}",
                f"what changed: {escape(c['subject'])}" + (f" · values: {escape(values)}" if values else ""),
                f"recompiles: {c['count']} ({escape(', '.join(c['compile_ids']))})",
                "",
                f"[green]fix[/green]  {escape(c['fix'])}",
                "",
                "[dim]enter on a compile id in the tree, then 2 (guards) shows the guard that failed.[/dim]",
            ]
        )


def _frame_lines(frames: list[dict], last: int = 12) -> list[str]:
    return [
        f"  {escape(location(f['file'], f['line']))} in {escape(f['function'])}: {escape(f['code'].strip())}"
        for f in frames[-last:]
    ]


def _specialization_detail(sp: dict) -> str:
    """A shape specialisation: what was fixed, why, the guards it added, the user's and torch's stack."""
    lines = [
        f"[b]{escape(', '.join(sp['sources']) or sp['symbol'])} ({escape(sp['symbol'])}) was specialised "
        f"to {escape(sp['value'])}[/b] in compile {escape(sp['compile_id'])} of {escape(sp['function'])}",
        f"why: {escape(sp['reason'])}",
        "",
        "[b]guards it added[/b]",
        *([f"  {escape(g['expr'])}" for g in sp["guards"]] or ["  (none logged)"]),
        "",
        "[b]your code[/b]",
        *(_frame_lines(sp["user_stack"]) or ["  (no user frame logged)"]),
        "",
        "[b]torch's stack[/b] (innermost last)",
        *_frame_lines(sp["stack"]),
        "",
        "[green]fix[/green]  if the dimension should stay dynamic, avoid branching on its value "
        "(or use torch._check); torch.compile(dynamic=False) makes every size static instead",
    ]
    return "\n".join(lines)
