"""Compile metrics per compile id and stage, and the rank comparison."""

from __future__ import annotations

from collections import Counter

from rich.text import Text

from fxlens.report.coldstart import cache_outcomes
from fxlens.report.document import Section
from fxlens.report.linetimes import compile_functions, tree_text
from fxlens.report.ranks import rank_ranges
from fxlens.trace.userframes import short_path, source_line
from fxlens.tui.loader import OUTCOME_LABEL, OUTCOME_STYLE, display_function
from fxlens.tui.safe import escape
from fxlens.tui.view_list import ListView

# one styled cell per outcome, shared by every row (the table copies a cell when it draws it):
# thousands of rows of Text objects would be garbage the cyclic GC rescans on every key
_OUTCOME_CELL = {k: Text(v, style=OUTCOME_STYLE[k]) for k, v in OUTCOME_LABEL.items()}


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def _cache_cell(row: dict) -> str:
    """ "hit", "miss", "bypass", "hit/miss" (over torch's caches, from its cache artifacts or its
    counters), or "-" when the trace records no lookup."""
    outcomes = set()
    for text in cache_outcomes(row).values():
        outcomes |= {w for w in text.replace(",", " ").split() if w in ("hit", "miss", "bypass")}
    return "/".join(o for o in ("hit", "miss", "bypass") if o in outcomes) or "-"


def section_detail(sec: Section) -> str:
    """A report section as the detail pane shows it: its title bold, its lines as the terminal's."""
    title, *lines = sec.text_lines()
    return "\n".join([f"[b]{escape(title)}[/b]", *(escape(x) for x in lines)])


class MetricsView(ListView):
    """Time per compile id, split into Dynamo tracing and backend compile, slowest visible at a glance.

    Params: key ("<rank>|<compile id>"), filter.
    """

    view_id = "metrics"
    title = "Metrics"
    columns = (
        "rank",
        "compile id",
        "function",
        "dynamo s",
        "backend s",
        "total s",
        "cache",
        "guards",
        "outcome",
        "",
    )
    priority = (
        "compile id",
        "outcome",
        "total s",
        "cache",
        "function",
        "rank",
        "backend s",
        "dynamo s",
        "guards",
    )
    empty = "No compilation metrics were logged."

    def _per_compile(self) -> dict[tuple, dict]:
        """(rank, compile id) -> the report's per-compile row (restart reasons of every attempt)."""
        if getattr(self, "_rows_by_id", None) is None or self._rows_of is not self.data.summary:
            merged: dict[tuple, dict] = {}
            for row in self.data.summary.per_compile if self.data.summary else []:
                key = (row["rank"], row["compile_id"])
                restarts = merged[key]["restart_reasons"] if key in merged else []
                merged[key] = {**row, "restart_reasons": restarts + list(row.get("restart_reasons") or [])}
            self._rows_by_id, self._rows_of = merged, self.data.summary
        return self._rows_by_id

    def rows(self):
        metrics = [m for r in self.data.session.ranks for m in r.metrics]
        per = self._per_compile()
        # on a job the same compile id is a row per rank: the rank is what tells them apart
        ranked = len(self.data.session.ranks) > 1
        self.priority = (
            ("compile id", "rank", *(c for c in type(self).priority if c not in ("compile id", "rank")))
            if ranked
            else type(self).priority
        )
        top = max((m.total_s or 0.0 for m in metrics), default=0.0) or 1.0
        out = []
        for m in metrics:
            c = self.data.compile(m.rank, m.compile_id)
            outcome = c.outcome if c else "ok"
            dyn = None if m.total_s is None else max(0.0, m.total_s - (m.backend_s or 0.0))
            bar = "█" * max(1, round(12 * (m.total_s or 0.0) / top)) if m.total_s else ""
            cells = (
                "-" if m.rank is None else str(m.rank),
                m.compile_id,
                display_function(m.function, m.co_name),
                _s(dyn),
                _s(m.backend_s),
                _s(m.total_s),
                _cache_cell(per.get((m.rank, m.compile_id)) or {}),
                "-" if m.guard_count is None else str(m.guard_count),
                _OUTCOME_CELL[outcome],
                bar,
            )
            out.append(
                (f"{m.rank}|{m.compile_id}", cells, f"{m.compile_id} {m.function} {m.co_name} {outcome}")
            )
        # after the compiles (the view opens on the first one): the report's compile-time headlines
        return out + self._cost_rows()

    def _cost(self) -> list[tuple[str, Section]]:
        s = self.data.summary
        return s.cost if s else []

    def _cost_rows(self) -> list[tuple]:
        """The report's compile-time headlines, a row each (key `c<i>`): where cold start
        went, what the caches did, each repeated block that regional compilation would compile once."""
        out = []
        for i, (label, sec) in enumerate(self._cost()):
            lines = sec.text_lines()
            cells = ("-", label, (lines[1:] or [""])[0], "-", "-", "-", "-", "-", "", "")
            out.append((f"c{i}", cells, " ".join(lines)))
        return out

    def _stages(self, rank: int | None, cid: str) -> list[tuple[str, float]]:
        c = self.data.compile(rank, cid)
        recs = [r for r in c.records if r.kind == "compilation_metrics"] if c else []
        # the record's metadata is on disk once the model read it (Record.full_meta reads it back)
        return _stage_times(recs[-1].full_meta().get("compilation_metrics") or {}) if recs else []

    def detail(self, key: str) -> str:
        if key.startswith("c") and key[1:].isdigit() and int(key[1:]) < len(self._cost()):
            return section_detail(self._cost()[int(key[1:])][1])
        if "|" not in key:
            return ""
        rank_s, cid = key.split("|", 1)
        rank = None if rank_s == "None" else int(rank_s)
        m = next(
            (x for r in self.data.session.ranks for x in r.metrics if x.rank == rank and x.compile_id == cid),
            None,
        )
        if m is None:
            return ""
        total = sum(x.total_s or 0.0 for r in self.data.session.ranks for x in r.metrics)
        lines = [
            f"[b]compile {escape(cid)}[/b] · {escape(display_function(m.function, m.co_name))} · "
            f"{escape(short_path(m.file))}:{m.line}",
            f"total {_s(m.total_s)} s = Dynamo {_s(None if m.total_s is None else m.total_s - (m.backend_s or 0))} s"
            f" + backend {_s(m.backend_s)} s · {100 * (m.total_s or 0) / (total or 1):.1f}% of all compile time",
            f"guards {m.guard_count} · graph nodes {m.graph_node_count if m.graph_node_count is not None else '-'}",
        ]
        row = self._per_compile().get((rank, cid)) or {}
        if m.time_source and m.time_source != "entire_frame_compile_time_s":
            lines.append(f"total from torch's {escape(m.time_source)} (no whole-frame time logged)")
        cache = cache_outcomes(row)
        lines.append(
            "cache: " + (", ".join(f"{k} {v}" for k, v in cache.items()) or "no cache lookup in this trace")
        )
        for c in row.get("caches") or []:  # each lookup: a hit's saving, a miss's cost, torch's reason
            what = (
                f"saved {c['saved_s']:.3f} s"
                if c.get("saved_s")
                else f"compiled in {c['taken_s']:.3f} s"
                if c.get("taken_s")
                else ""
            )
            reason = " ".join((c.get("reason") or "").split())
            lines.append(f"  {escape(c['cache'])} {escape(c['outcome'])} {what} {escape(reason)}".rstrip())
        restarts = row.get("restart_reasons") or []
        if restarts:  # the whole reason, as the report's "Failures and restarts" has it
            lines += ["", "[yellow]restarted[/yellow] (Dynamo analysed the frame again):"]
            lines += [escape(x) for x in restarts]
        stages = self._stages(rank, cid)
        if m.total_s is not None:  # torch records no Dynamo-only time: the frame's total less the backend
            stages.insert(0, ("Dynamo (trace, guards)", max(0.0, m.total_s - (m.backend_s or 0.0))))
        if m.backward_s:
            stages.append(("backward graph's compile", m.backward_s))
        if stages:
            top = max(v for _, v in stages) or 1.0
            lines += ["", "[b]time by stage[/b] (torch's compilation metrics)"]
            lines += [f"  {escape(k):<40} {v:9.4f} s  {'█' * max(1, round(24 * v / top))}" for k, v in stages]
        if functions := compile_functions(self.data.session, rank, cid):  # measured under fxlens run
            lines += ["", "[b]Dynamo by source line[/b] (self and inclusive seconds, shares of its tracing)"]
            lines += [escape(x) for x in tree_text(functions, source_line)]
        if m.fail_type:
            lines += ["", f"[red]failed: {escape(m.fail_type)}[/red] {escape((m.fail_reason or '').strip())}"]
        return "\n".join(lines)


# torch's compilation-metrics timings that are compile stages, with their names here; anything else
# (remote_cache_time_saved, distributed_ephemeral_timeout, cumulative copies) is not a stage
_STAGES = (
    ("backend_compile_time", "backend (AOTAutograd + compiler)"),
    ("inductor_compile_time", "  inductor"),
    ("code_gen_time", "    code generation"),
    ("triton_compile_time", "    Triton compile"),
    ("joint_graph_pass_time", "  joint-graph passes"),
    ("pre_grad_pass_time", "  pre-grad passes"),
    ("post_grad_pass_time", "  post-grad passes"),
    ("dynamo_time_before_restart", "Dynamo before a restart"),
    ("gc_time", "gc after compile"),
    ("structured_logging_overhead", "trace logging overhead"),
)


def _stage_times(meta: dict) -> list[tuple[str, float]]:
    """(stage, seconds) of the compile-stage timings in a compilation_metrics record, in pipeline order."""
    out = []
    for key, label in _STAGES:
        v = meta.get(key + "_s")
        if not _num(v):
            v = meta.get(key + "_us")
            v = v / 1e6 if _num(v) else None
        if v:
            out.append((label, float(v)))
    return out


def _num(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


class RanksView(ListView):
    """Ranks grouped by behaviour: one row per group (the ranks that compiled the same way), the
    outliers with the compile where they diverge and why; the detail lists the group's ranks.

    Params: key (the group's index), filter.
    """

    view_id = "ranks"
    title = "Ranks"
    columns = ("ranks", "count", "diverges at", "cause", "compiles")
    priority = ("ranks", "cause", "diverges at", "count", "compiles")
    empty = (
        "One rank only: rank comparison needs a trace with several ranks (and this one has no collectives)."
    )

    def _groups(self) -> list[dict]:
        s = self.data.summary
        return (s.rank_groups.get("groups") or []) if s else []

    def _sections(self) -> list[Section]:
        s = self.data.summary
        return s.sections if s else []

    def rows(self):
        # run-time findings first (a hang risk outranks a compile difference), one row a section:
        # collectives across ranks, collectives parity, runtime estimates, execution order, export
        # issues, DDP splits / compiled autograd / AOTInductor graphs (fxlens.report.distributed)
        out = []
        for i, sec in enumerate(self._sections()):
            head = sec.name
            alarms = [x for x in sec.lines if x.alarm]
            first = (alarms or sec.lines)[0].shown() if sec.lines else ""
            cells = (
                "-",
                str(len(sec.lines)),
                Text(head, style="bold red") if alarms else head,
                Text(first, style="bold red") if alarms else first,
                "",
            )
            out.append((f"s{i}", cells, " ".join(sec.text_lines())))
        if len(self.data.session.ranks) < 2:
            return out
        for i, g in enumerate(self._groups()):
            d = g["first_divergence"] or {}
            at = f"{d['compile_id']} {d['function']} (step {d['step']})" if d else "-"
            cause = (
                d.get("cause", "")
                if d
                else ("all ranks alike" if len(self._groups()) == 1 else "the reference")
            )
            cells = (
                rank_ranges(g["ranks"], limit=4),
                str(g["count"]),
                Text(at, style="bold red") if d else at,
                Text(cause, style="bold red") if d else cause,
                str(g["compiles"]),
            )
            out.append((str(i), cells, f"{g['ranges']} {at} {cause}"))
        return out

    def detail(self, key: str) -> str:
        if key.startswith("s") and key[1:].isdigit() and int(key[1:]) < len(self._sections()):
            return section_detail(self._sections()[int(key[1:])])
        groups = self._groups()
        if not key.isdigit() or int(key) >= len(groups):
            return ""
        g = groups[int(key)]
        d = g["first_divergence"]
        lines = [f"[b]{g['count']} rank(s):[/b] {escape(g['ranges'])}"]
        if d:
            lines += [
                "[b red]diverges[/b red] — ranks that compile differently can hang in collectives",
                f"  from compile {escape(d['compile_id'])} of {escape(d['function'])}, "
                f"step {d['step']} (the rank's compile #{d['step']})",
                f"  cause: {escape(d['cause'])}",
            ]
        elif len(groups) > 1:
            lines.append("the largest group: the others are compared with it")
        lines += ["", *self._matrix(groups)]
        members = set(g["ranks"])
        per_rank = [r for r in self.data.summary.rank_groups.get("per_rank", []) if r["rank"] in members]
        lines += ["", "[b]rank  compiles  graphs  breaks  recompiles  failures  compile s[/b]"]
        for r in per_rank[:50]:
            lines.append(
                f"{r['rank']!s:>4}  {r['compiles']:>8}  {r['graphs']:>6}  {r['graph_breaks']:>6}  "
                f"{r['recompiles']:>10}  {r['failures']:>8}  {r['compile_s']:>9}"
            )
        if len(per_rank) > 50:
            lines.append(f"… {len(per_rank) - 50} more ranks (the JSON report has every one)")
        for m in self.data.session.ranks:
            if m.rank in members and m.skipped:
                lines += [f"[yellow]rank {m.rank}: {escape(s)}[/yellow]" for s in m.skipped]
        return "\n".join(lines)

    def _matrix(self, groups: list[dict]) -> list[str]:
        """Compiles per function, one column per group (its first rank), rows that differ in red."""
        firsts = [g["ranks"][0] for g in groups[:12]]
        by_rank = {m.rank: m for m in self.data.session.ranks}
        counts = [
            Counter(x.function for x in by_rank[r].metrics) if r in by_rank else Counter() for r in firsts
        ]
        fns = sorted(set().union(*counts), key=lambda f: (-max(c[f] for c in counts), f))
        width = max([len("function")] + [len(f) for f in fns[:40]])
        head = "".join(f"{'r' + str(r):>7}" for r in firsts)
        out = ["[b]compiles per function, one rank of each group[/b]", f"  {'function':<{width}}{head}"]
        for fn in fns[:40]:
            row = f"  {escape(fn):<{width}}" + "".join(f"{c[fn]:>7}" for c in counts)
            out.append(f"[red]{row}[/red]" if len({c[fn] for c in counts}) > 1 else row)
        if len(fns) > 40:
            out.append(f"  … {len(fns) - 40} more functions")
        return out
