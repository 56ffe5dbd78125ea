"""Bisect, minify and doctor results of a session, and the raw artifact view."""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message

from fxlens.report.bisect_result import BisectResult, Culprit
from fxlens.report.doctor_result import DoctorResult
from fxlens.report.memorytext import memory_lines
from fxlens.report.minify_result import MinifyResult
from fxlens.trace.sanitize import for_terminal, read_display_text
from fxlens.trace.userframes import short_path
from fxlens.tui import keys
from fxlens.tui.lazy_table import VimTable
from fxlens.tui.safe import escape
from fxlens.tui.viewbase import Navigate, View, guarded, record_text
from fxlens.tui.widgets import CodeView, Info


def _ladder(ev: dict) -> list[str]:
    r = BisectResult.from_json(ev)
    out = ["[b]stage ladder[/b]"]
    for st in r.stages:
        ok = st.ok
        mark = (
            "[green]✓ pass[/green]" if ok else "[red]✗ FAIL[/red]" if ok is False else "[dim]· skipped[/dim]"
        )
        why = st.error or st.note or ""
        out.append(
            f"  {mark}  {escape(str(st.stage))}" + (f"  [dim]{escape(str(why)[:80])}[/dim]" if why else "")
        )
    if not r.stages:
        out.append(f"  first failing stage: {escape(str(r.first_failing_stage))}")
    c = r.culprit
    if c is not None and c != Culprit():  # a culprit that names something
        out += ["", "[b]culprit[/b]"]
        out.append(f"  compile {escape(str(c.compile_id))} · {escape(str(c.function))}  [dim](o: jump)[/dim]")
        out.append(f"  at {escape(short_path(str(c.file)))}:{escape(c.line)}")
        if c.kernel:
            out.append(f"  kernel [b]{escape(c.kernel)}[/b]")
        if c.ops:
            out.append(f"  ops {escape(', '.join(c.ops))}")
    out.append(f"\ncheck {escape(str(r.check))} · {escape('?' if r.runs is None else r.runs)} runs")
    if r.next:
        out.append(f"next: [b]{escape(r.next)}[/b]")
    return out


def _minify(ev: dict) -> list[str]:
    """Only the fields the event has: an interrupted or older minify lacks some (no "None → None")."""
    r = MinifyResult.from_json(ev)
    out = ["[b]minified reproducer[/b]"]
    if r.repro is not None:
        out.append(f"  {escape(short_path(r.repro))}")
    facts = [f"{k} {escape(v)}" for k, v in (("check", r.check), ("signature", r.signature)) if v is not None]
    if facts:
        out.append("  " + " · ".join(facts))
    if r.original_nodes is not None and r.final_nodes is not None:
        out.append(f"  nodes {escape(r.original_nodes)} → [b]{escape(r.final_nodes)}[/b]")
    elif r.original_nodes is not None:
        out.append(f"  original nodes {escape(r.original_nodes)}")
    elif r.final_nodes is not None:
        out.append(f"  final nodes {escape(r.final_nodes)}")
    if r.queries is not None or r.seconds is not None:
        queries = f"{escape(r.queries)} queries " if r.queries is not None else ""
        seconds = f"in {escape(r.seconds)} s" if r.seconds is not None else ""
        out.append(f"  {queries}{seconds}".rstrip())
    if len(out) == 1:
        out.append("  [dim](no details recorded: the minify did not finish)[/dim]")
    return out


def _doctor_memory(mem) -> list[str]:
    """doctor's memory by cause (the same tables as its text report), when it measured it."""
    if not isinstance(mem, dict) or not (mem.get("breakdown") or mem.get("functions")):
        return []
    try:
        lines = memory_lines(mem)
    except (KeyError, TypeError, ValueError, IndexError):  # an event from another version: skip it
        return []
    return ["", "[b]memory by cause[/b]", *(f"  {escape(ln)}" for ln in lines)]


def _doctor(ev: dict) -> list[str]:
    r = DoctorResult.from_json(ev)
    out = ["[b]functions[/b]"]
    for f in r.functions:
        out.append(
            f"  {escape(str(f.get('function')))}: eager {escape(f.get('eager_ms'))} ms, compiled "
            f"{escape(f.get('compiled_ms'))} ms, speedup {escape(f.get('speedup'))}, compile {escape(f.get('compile_s'))} s"
        )
    out += _doctor_memory(r.peak_memory)
    out += ["", "[b]findings[/b]"]
    for i, f in enumerate(r.findings, 1):
        out.append(f"  {i}. {escape(str(f.get('message')))}")
        if f.get("fix"):
            out.append(f"     [green]fix[/green] {escape(str(f.get('fix')))}")
    return out


class OpenRun(Message):
    """Posted by the results view or the tree: open the session of a child run (its trace) on top
    of this one, at `view`/`params` once it is read (default: where a session opens)."""

    def __init__(self, path: Path, view: str | None = None, **params) -> None:
        super().__init__()
        self.path = path
        self.view = view
        self.params = params


class ResultsView(View):
    """The session's bisect/minify/doctor events; the selected one's ladder, culprit and repro code;
    the child runs that kept a trace (`r` opens one in this app, escape comes back).

    Params: key (event index), run (the selected run's name).
    """

    view_id = "results"
    title = "Bisect"
    BINDINGS = keys.bindings("results")
    # | key | action                                  |
    # | o   | jump to the culprit's kernel or graph (opening the run that has it) |
    # | r   | open the selected run's trace           |
    DEFAULT_CSS = """
    ResultsView #results-table { height: 8; }
    ResultsView Horizontal { height: 1fr; }
    ResultsView #results-left { width: 1fr; border-right: solid $primary; }
    ResultsView #results-scroll { height: 1fr; padding: 0 1; }
    ResultsView #results-runs { height: 9; border-top: solid $primary; display: none; }
    ResultsView #results-runs.shown { display: block; }
    ResultsView #results-code { width: 1fr; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[dict] = []

    def compose(self) -> ComposeResult:
        yield VimTable(id="results-table")
        with Horizontal():
            with Vertical(id="results-left"):
                with VerticalScroll(id="results-scroll"):
                    yield Info("", id="results-detail")
                yield VimTable(id="results-runs")
            yield CodeView(id="results-code")

    @guarded
    def set_data(self, data) -> None:
        super().set_data(data)
        self._fill_runs(data.summary.runs if data.summary else [])
        table = self.query_one("#results-table", VimTable)
        table.clear(columns=True)
        table.add_columns("#", "event", "summary")
        table.priority = ("summary", "event", "#")
        events = data.summary.events if data.summary else []
        for i, ev in enumerate(events):
            table.add_row(str(i + 1), str(ev.get("event")), str(ev.get("summary", "")), key=str(i))
        if not events:
            self.query_one("#results-detail", Info).set(
                "No bisect, minify or doctor results in this session: run `fxlens bisect SCRIPT` or "
                "`fxlens minify SCRIPT` and open the session they write."
            )
        else:
            self._detail(0)

    def _fill_runs(self, runs: list[dict]) -> None:
        self.runs = runs
        table = self.query_one("#results-runs", VimTable)
        table.clear(columns=True)
        table.add_columns("run (r: open its trace)", "exit", "logs", "MB")
        for r in runs:
            code = r["exit_code"]
            table.add_row(
                r["name"], "?" if code is None else str(code), str(r["logs"]), f"{r['mb']:.1f}", key=r["name"]
            )
        table.set_class(bool(runs), "shown")
        if runs:  # the last run is the one that confirmed the verdict
            table.move_cursor(row=len(runs) - 1)

    def selected_run(self) -> dict | None:
        """The run under the runs table's cursor."""
        table = self.query_one("#results-runs", VimTable)
        return self.runs[table.cursor_row] if self.runs and table.cursor_row < len(self.runs) else None

    @on(VimTable.RowHighlighted, "#results-runs")
    def _run_row(self, event: VimTable.RowHighlighted) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.params["run"] = event.row_key.value

    def action_open_run(self) -> None:
        run = self.selected_run()
        if run is None:
            self.app.notify("this session kept no child runs with a trace", severity="warning")
            return
        self.post_message(OpenRun(run["path"]))

    def draw(self) -> None:
        names = [r["name"] for r in self.runs]
        if self.params.get("run") in names:
            self.query_one("#results-runs", VimTable).move_cursor(row=names.index(self.params["run"]))
        if "key" in self.params and self.data and self.data.summary:
            i = int(self.params["key"])
            if i < len(self.data.summary.events):
                self.query_one("#results-table", VimTable).move_cursor(row=i)
                self._detail(i)

    @on(VimTable.RowHighlighted, "#results-table")
    def _row(self, event: VimTable.RowHighlighted) -> None:
        event.stop()
        if event.row_key.value is not None:
            self._detail(int(event.row_key.value))

    @guarded
    def _detail(self, i: int) -> None:
        ev = self.data.summary.events[i]
        self.params["key"] = str(i)
        kind = ev.get("event")
        lines = [f"[b]{escape(str(kind))}[/b]: {escape(str(ev.get('summary', '')))}", ""]
        lines += _ladder(ev) if kind == "bisect" else _minify(ev) if kind == "minify" else _doctor(ev)
        self.query_one("#results-detail", Info).set("\n".join(lines))
        code = ""
        repro = MinifyResult.from_json(ev).repro if kind == "minify" else None
        if repro:
            # only a regular file is read: a hostile events.jsonl may name a FIFO or /dev/zero
            text = read_display_text(str(repro))
            code = for_terminal(text) if text is not None else for_terminal(f"# {repro}: not readable here")
        pane = self.query_one("#results-code", CodeView)
        pane.set_code(code)
        pane.display = bool(code)  # no reproducer: the ladder gets the whole width

    @guarded
    def action_jump_culprit(self) -> None:
        events = self.data.summary.events if self.data and self.data.summary else []
        i = int(self.params.get("key", 0))
        c = (BisectResult.from_json(events[i]).culprit if i < len(events) else None) or Culprit()
        if not c.compile_id:
            self.app.notify("this result names no culprit compile", severity="warning")
        elif self.data.compile(None, c.compile_id) is None:
            run = self.selected_run()  # the last run by default: the one that confirmed the culprit
            if run is None:
                self.app.notify(f"compile {c.compile_id} is not in this session", severity="warning")
                return
            # the culprit lives in a run's trace: open that run at it (escape comes back)
            view, params = ("kernels", {"kernel": c.kernel}) if c.kernel else ("graph", {})
            self.post_message(OpenRun(run["path"], view, compile_id=c.compile_id, **params))
        elif c.kernel:
            self.post_message(Navigate("kernels", compile_id=c.compile_id, kernel=c.kernel))
        else:
            self.post_message(Navigate("graph", compile_id=c.compile_id))

    def focus_main(self) -> None:
        events = self.query_one("#results-table", VimTable)
        (events if events.row_count or not self.runs else self.query_one("#results-runs", VimTable)).focus()

    def export_text(self) -> str:
        runs = self.query_one("#results-runs", VimTable).export_text() if self.runs else ""
        return (
            self.query_one("#results-table", VimTable).export_text()
            + ("\n\nRuns:\n" + runs if runs else "")
            + "\n\n"
            + self.query_one("#results-detail", Info).plain
            + "\n\n"
            + self.query_one("#results-code", CodeView).text()
            + "\n"
        )


class ArtifactView(View):
    """Any record of a compile as text (JSON pretty-printed): IR, fusion decisions, wrapper code...

    Params: rank, compile_id, kind, index (which record of that kind, in log order).
    """

    view_id = "artifact"
    title = "Raw"
    DEFAULT_CSS = """
    ArtifactView #artifact-title { height: auto; padding: 0 1; background: $boost; }
    ArtifactView #artifact-code { height: 1fr; }
    """

    def compose(self) -> ComposeResult:
        yield Info("Select an artifact in the tree to read it here.", id="artifact-title")
        yield CodeView(id="artifact-code")

    def draw(self) -> None:
        p = self.params
        entry = self.data.compile(p.get("rank"), p.get("compile_id", ""))
        if entry is None:
            return
        recs = [r for r in entry.records if r.kind == p.get("kind")]
        if not recs:
            return
        rec = recs[min(int(p.get("index", 0)), len(recs) - 1)]
        text = record_text(rec)
        lang = "json" if text.lstrip().startswith(("{", "[")) else "python"
        self.query_one("#artifact-title", Info).set(
            f"[b]compile {escape(entry.compile_id)}[/b] · {escape(rec.kind)} · {Path(rec.path).name}:{rec.line_no}"
        )
        self.query_one("#artifact-code", CodeView).set_code(text, lang)

    def search(self, query: str) -> int:
        return self.query_one("#artifact-code", CodeView).find(query)

    def search_next(self) -> None:
        self.query_one("#artifact-code", CodeView).find_next()

    def export_text(self) -> str:
        return (
            self.query_one("#artifact-title", Info).plain
            + "\n\n"
            + self.query_one("#artifact-code", CodeView).text()
            + "\n"
        )
