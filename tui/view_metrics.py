"""Compile metrics per compile id and stage, and the rank comparison."""

from __future__ import annotations

from collections import Counter

from rich.text import Text

from fxlens.trace.userframes import short_path
from fxlens.tui.loader import OUTCOME_LABEL, OUTCOME_STYLE, display_function
from fxlens.tui.safe import escape
from fxlens.tui.view_list import ListView

# one styled cell per outcome, shared by every row (the table copies a cell when it draws it):
# thousands of rows of Text objects would be garbage the cyclic GC rescans on every key
_OUTCOME_CELL = {k: Text(v, style=OUTCOME_STYLE[k]) for k, v in OUTCOME_LABEL.items()}


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


class MetricsView(ListView):
    """Time per compile id, split into Dynamo tracing and backend compile, slowest visible at a glance.

    Params: key ("<rank>|<compile id>"), filter.
    """

    view_id = "metrics"
    title = "Metrics"
    columns = ("rank", "compile id", "function", "dynamo s", "backend s", "total s", "guards", "outcome", "")
    empty = "No compilation metrics were logged."

    def rows(self):
        metrics = [m for r in self.data.session.ranks for m in r.metrics]
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
                "-" if m.guard_count is None else str(m.guard_count),
                _OUTCOME_CELL[outcome],
                bar,
            )
            out.append(
                (f"{m.rank}|{m.compile_id}", cells, f"{m.compile_id} {m.function} {m.co_name} {outcome}")
            )
        return out

    def _stages(self, rank: int | None, cid: str) -> list[tuple[str, float]]:
        c = self.data.compile(rank, cid)
        recs = [r for r in c.records if r.kind == "compilation_metrics"] if c else []
        return _stage_times(recs[-1].meta.get("compilation_metrics") or {}) if recs else []

    def detail(self, key: str) -> str:
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
        stages = self._stages(rank, cid)
        if m.backward_s:
            stages.append(("backward graph's compile", m.backward_s))
        if stages:
            top = max(v for _, v in stages) or 1.0
            lines += ["", "[b]time by stage[/b] (torch's compilation metrics)"]
            lines += [f"  {escape(k):<40} {v:9.4f} s  {'█' * max(1, round(24 * v / top))}" for k, v in stages]
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
    """Ranks side by side: per-rank counts, cells that differ from rank 0 in red, and where they diverge.

    Params: key (rank as text), filter.
    """

    view_id = "ranks"
    title = "Ranks"
    columns = (
        "rank",
        "graphs",
        "graph breaks",
        "recompiles",
        "limit hits",
        "kernels",
        "compile s",
        "skipped",
    )
    empty = "One rank only: rank comparison needs a trace with several ranks."

    def _counts(self, r) -> tuple:
        return (
            len(r.graphs),
            len(r.graph_breaks),
            len(r.recompiles),
            len(r.limit_hits),
            len(r.kernels),
            round(sum(m.total_s or 0.0 for m in r.metrics), 2),
            len(r.skipped),
        )

    def rows(self):
        ranks = self.data.session.ranks
        if len(ranks) < 2:
            return []
        base = self._counts(ranks[0])
        out = []
        for r in ranks:
            counts = self._counts(r)
            cells = ["-" if r.rank is None else str(r.rank)]
            for i, (v, b) in enumerate(zip(counts, base, strict=True)):
                # compile time always differs a little; flag counts only
                cells.append(Text(str(v), style="bold red") if v != b and i not in (5, 6) else str(v))
            out.append((str(r.rank), tuple(cells), f"rank {r.rank}"))
        return out

    def detail(self, key: str) -> str:
        div = self.data.summary.divergence if self.data.summary else []
        lines = []
        if div:
            lines.append(
                "[b red]Ranks diverge[/b red] — ranks that compile differently can hang in collectives:"
            )
            lines += [f"  • {escape(d['message'])}" for d in div]
        else:
            lines.append("[green]All ranks compiled the same graphs, breaks and recompiles.[/green]")
        lines += ["", *self._matrix(key)]
        r = next((x for x in self.data.session.ranks if str(x.rank) == key), None)
        if r is not None:
            lines += [f"[yellow]rank {escape(key)}: {escape(s)}[/yellow]" for s in r.skipped]
        return "\n".join(lines)

    def _matrix(self, key: str) -> list[str]:
        """Compiles per (function, rank), the selected rank's column bold, rows that differ in red."""
        ranks = self.data.session.ranks
        counts = [Counter(m.function for m in r.metrics) for r in ranks]
        fns = sorted(set().union(*counts), key=lambda f: (-max(c[f] for c in counts), f))
        width = max([len("function")] + [len(f) for f in fns[:40]])
        head = "".join(f"{'r' + str(r.rank):>7}" for r in ranks)
        out = ["[b]compiles per function and rank[/b]", f"  {'function':<{width}}{head}"]
        for fn in fns[:40]:
            cells = []
            for r, c in zip(ranks, counts, strict=True):
                cell = f"{c[fn]:>7}"
                cells.append(f"[b]{cell}[/b]" if str(r.rank) == key else cell)
            row = f"  {escape(fn):<{width}}" + "".join(cells)
            out.append(f"[red]{row}[/red]" if len({c[fn] for c in counts}) > 1 else row)
        if len(fns) > 40:
            out.append(f"  … {len(fns) - 40} more functions")
        return out
