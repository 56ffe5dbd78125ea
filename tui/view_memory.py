"""doctor's memory by cause: where the compiled run's extra memory goes, per compiled function.

The rows come from the session's last `doctor` event read as a DoctorResult (its `peak_memory`),
never from doctor's text: first the whole run's peak RSS and the parts that add up to its
difference, then per compiled function its tensor peak per call and its parts (activations saved
for backward, tensors the compiled code holds, the remainder). Each row has eager bytes, compiled
bytes and the difference; the detail pane has the exact bytes, the largest saved or held tensors
with their op and source line, and the fix doctor names for the cause.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fxlens.report.doctor_result import DoctorResult
from fxlens.report.memorytext import PART_NAMES
from fxlens.trace.userframes import location
from fxlens.tui.safe import escape
from fxlens.tui.view_list import ListView

# the table's part names: short, so that the four columns fit the 48 cells a view has at 80x24
SHORT = {
    "before_script": "before script",
    "compiler": "while compiling",
    "held_by_compiled_code": "held tensors",
    "call_tensors": "call tensors",
    "saved_activations": "saved for backward",
    "remainder": "remainder",
}


@dataclass(frozen=True)
class MemRow:
    """One row: a total (the run, or a function's call) or one of its parts.

    `eager`/`compiled` are None where only the difference is measured (the run's parts: a peak
    splits by when it grew, not by side)."""

    key: str
    label: str
    eager: int | None
    compiled: int | None
    difference: int
    part: dict = field(default_factory=dict)  # the JSON it comes from (a part, or the function)
    function: dict | None = None  # the compiled function a per-call row belongs to


def mib_cell(n: int | None, signed: bool = False) -> str:
    """MiB with one decimal (the first column's header says MiB); `-` where nothing was measured."""
    if n is None:
        return "-"
    return f"{n / (1 << 20):+.1f}" if signed and n else f"{n / (1 << 20):.1f}"


def exact(n: int | None, signed: bool = False) -> str:
    """Bytes as measured, and in MiB: `25,165,824 B (24.0 MiB)`."""
    if n is None:
        return "not measured"
    sign = "+" if signed and n > 0 else ""
    return f"{sign}{n:,} B ({sign}{n / (1 << 20):.1f} MiB)"


def _part_sides(part: dict, f: dict) -> tuple[int | None, int | None]:
    """Eager and compiled bytes of one of a function's parts, where they are known.

    The remainder's sides are each side's peak less its saved bytes: the difference doctor gives
    it is exactly compiled - eager of those (checked; shown as `-` if a result disagrees)."""
    cause = part.get("cause")
    if cause == "saved_activations":
        return part.get("eager"), part.get("compiled")
    if cause == "held_by_compiled_code":
        return 0, part.get("bytes")  # eager runs the model's own tensors only
    if cause == "remainder":
        saved = next((p for p in f.get("parts", []) if p.get("cause") == "saved_activations"), {})
        try:
            e = f["eager"]["peak"] - (saved.get("eager") or 0)
            c = f["compiled"]["peak"] - (saved.get("compiled") or 0)
        except (KeyError, TypeError):
            return None, None
        return (e, c) if c - e == part.get("bytes") else (None, None)
    return None, None


def memory_rows(mem: dict) -> list[MemRow]:
    """The rows of doctor's `peak_memory`: the run's, then each function's (empty: none measured)."""
    rows: list[MemRow] = []
    if mem.get("breakdown"):
        rss = mem.get("rss") or {}
        e, c = rss.get("eager", mem.get("eager")), rss.get("compiled", mem.get("compiled"))
        rows.append(MemRow("run", "whole run (RSS)", e, c, (c or 0) - (e or 0), mem))
        for p in mem["breakdown"]:
            rows.append(
                MemRow(
                    f"run:{p['cause']}", " " + SHORT.get(p["cause"], p["cause"]), None, None, p["bytes"], p
                )
            )
    for i, f in enumerate(mem.get("functions") or []):
        compiled = f["compiled"]["peak"] + f["compiled"]["held"]
        rows.append(MemRow(f"f{i}", str(f["function"]), f["eager"]["peak"], compiled, f["difference"], f, f))
        for p in f["parts"]:
            e, c = _part_sides(p, f)
            label = " " + SHORT.get(p["cause"], p["cause"])
            rows.append(MemRow(f"f{i}:{p['cause']}", label, e, c, p["bytes"], p, f))
    return rows


def _cause_of(mem: dict, row: MemRow) -> dict | None:
    """The cause doctor named for this part (with its fix), if it named one."""
    name = row.function.get("function") if row.function else None
    for c in mem.get("causes") or []:
        if c.get("cause") == row.part.get("cause") and c.get("function") == name:
            return c
    return None


def _tensor_line(t: dict, held: bool = False) -> str:
    """One saved or held tensor: its shape, dtype and bytes, what made it and where."""
    what = f"`{t.get('name') or '?'}`" if held else (t.get("op") or "?")
    node = f" ({t['node']})" if t.get("node") and t.get("node") != t.get("op") else ""
    where = f" at [b]{escape(location(t.get('file'), t.get('line')))}[/b]" if t.get("file") else ""
    code = f"  [dim]{escape(t['code'])}[/dim]" if t.get("code") else ""
    return (
        f"  {escape(t.get('shape'))} {escape(t.get('dtype') or '')} {escape(exact(t.get('bytes')))} "
        f"{escape(what)}{escape(node)}{where}{code}"
    )


def _run_detail(mem: dict) -> list[str]:
    kind = "the CUDA allocator's peak" if mem.get("kind") == "cuda_allocator" else "the processes' peak RSS"
    row = memory_rows(mem)[0]
    out = [
        f"[b]whole run[/b]: {kind}, compiled - eager, in parts that add up to it (the remainder shown)",
        f"eager {exact(row.eager)} · compiled {exact(row.compiled)}",
        f"difference [b]{exact(row.difference, signed=True)}[/b]",
        "",
    ]
    for p in mem["breakdown"]:
        out.append(f"  {escape(PART_NAMES.get(p['cause'], p['cause'])):<48} {exact(p['bytes'], signed=True)}")
    out.append(f"  {'sum of the parts':<48} {exact(sum(p['bytes'] for p in mem['breakdown']), signed=True)}")
    if mem["breakdown"][-1]["bytes"] < 0:
        out += [
            "",
            "[dim]a remainder below 0: compiling had already raised the peak that eager reached while running[/dim]",
        ]
    return out


def _function_detail(f: dict) -> list[str]:
    both = "forward and backward" if f.get("backward") else "forward only"
    at = f.get("compiled_at") or {}
    out = [
        f"[b]{escape(f['function'])}[/b] at {escape(location(f.get('file'), f.get('line')))}"
        + (f", compiled at {escape(location(at.get('file'), at.get('line')))}" if at.get("file") else ""),
        f"tensor peak of its typical call ({both}), replayed after the script:",
        f"  eager     {exact(f['eager']['peak'])}",
        f"  compiled  {exact(f['compiled']['peak'])} + {exact(f['compiled']['held'])} held",
        f"  difference [b]{exact(f['difference'], signed=True)}[/b] = "
        + " + ".join(f"{SHORT.get(p['cause'], p['cause'])} {mib_cell(p['bytes'])}" for p in f["parts"]),
    ]
    cost = f.get("cost") or {}
    if cost.get("seconds") is not None:
        out += [
            "",
            f"[dim]measured in {cost['seconds']:.2f} s (profiled calls {cost.get('profiled_s')} s vs "
            f"{cost.get('plain_s')} s unprofiled)[/dim]",
        ]
    return out


def _saved_detail(p: dict) -> list[str]:
    out = [
        f"[b]activations saved for backward[/b]: {exact(p['bytes'], signed=True)}",
        f"  eager     {exact(p.get('eager'))}, {p.get('eager_count', '?')} tensor(s)",
        f"  compiled  {exact(p.get('compiled'))}, {p.get('compiled_count', '?')} tensor(s)",
    ]
    for side, key in (("compiled", "compiled_top"), ("eager", "eager_top")):
        if p.get(key):
            out += [f"largest saved by the {side} run:"] + [_tensor_line(t) for t in p[key]]
    out.append(
        "[dim]autograd's saved tensors on the same call, each storage counted once, the model's "
        "parameters and the call's arguments left out[/dim]"
    )
    return out


def _held_detail(p: dict) -> list[str]:
    n = p.get("cache_entries", 0)
    out = [
        f"[b]held by the compiled code[/b]: {exact(p['bytes'])} in {p.get('entries_holding', 0)} of {n} "
        f"cache entr{'y' if n == 1 else 'ies'}",
    ]
    if p.get("largest"):
        out += ["largest held tensors:"] + [_tensor_line(t, held=True) for t in p["largest"]]
    out.append(
        "[dim]tensors the compiled code keeps apart from the model (lifted or folded constants, "
        "frozen parameters), one copy per cache entry[/dim]"
    )
    return out


def _remainder_detail(row: MemRow) -> list[str]:
    out = [f"[b]remainder[/b] {exact(row.difference, signed=True)}: {escape(row.part.get('what', ''))}"]
    if row.function is not None and row.eager is not None:
        f = row.function
        out += [
            f"  eager     peak {mib_cell(f['eager']['peak'])} MiB less its saved bytes = {exact(row.eager)}",
            f"  compiled  peak {mib_cell(f['compiled']['peak'])} MiB less its saved bytes = {exact(row.compiled)}",
            "[dim]inductor's planned buffers are part of it: they are not measured apart[/dim]",
        ]
    return out


def row_detail(mem: dict, row: MemRow) -> str:
    """Markup for the detail pane of `row`."""
    cause = row.part.get("cause")
    if row.key == "run":
        lines = _run_detail(mem)
    elif row.function is not None and row.part is row.function:
        lines = _function_detail(row.function)
    elif cause == "saved_activations":
        lines = _saved_detail(row.part)
    elif cause == "held_by_compiled_code" and row.function is not None:
        lines = _held_detail(row.part)
    elif cause == "remainder":
        lines = _remainder_detail(row)
    else:
        lines = [
            f"[b]{escape(PART_NAMES.get(cause, cause))}[/b] {exact(row.difference, signed=True)}",
            escape(row.part.get("what", "")),
        ]
    named = _cause_of(mem, row)
    if named:
        lines += ["", f"[b]doctor[/b]  {escape(named['message'])}"]
        if named.get("fix"):
            lines.append(f"[green]fix[/green]  {escape(named['fix'])}")
        if named.get("actions"):
            lines.append(
                "[dim]`fxlens fix --session` on this session tries it and measures the peak before → after[/dim]"
            )
    return "\n".join(lines)


class MemoryView(ListView):
    """doctor's memory by cause: the run's peak RSS and each compiled function's tensor peak per
    call, each split into parts with eager bytes, compiled bytes and the difference.

    Params: key (the row: "run", "run:<cause>", "f<i>", "f<i>:<cause>"), filter.
    """

    view_id = "memory"
    title = "Memory"
    columns = ("part (MiB)", "eager", "compiled", "diff")
    priority = ("part (MiB)", "diff", "compiled", "eager")
    cut_left = ()
    empty = (
        "No memory by cause in this session: `fxlens doctor SCRIPT` measures it (the run's peak RSS and "
        "each compiled function's tensors, eager vs compiled); open the session it writes."
    )

    def _memory(self) -> dict:
        events = self.data.summary.events if self.data and self.data.summary else []
        result = DoctorResult.from_events(events)
        mem = result.peak_memory if result else {}
        return mem if isinstance(mem, dict) else {}

    def rows(self):
        self.mem = self._memory()
        try:
            self.by_key = {r.key: r for r in memory_rows(self.mem)}
        except (KeyError, TypeError):  # a result of another version: say so, show nothing
            self.by_key = {}
            self.app.notify("Memory: this doctor result's breakdown is not readable here", severity="warning")
        out = []
        for r in self.by_key.values():
            cells = (r.label, mib_cell(r.eager), mib_cell(r.compiled), mib_cell(r.difference, signed=True))
            fn = r.function.get("function", "") if r.function else "run"
            out.append((r.key, cells, f"{r.label} {fn} {r.part.get('cause', '')}"))
        return out

    def detail(self, key: str) -> str:
        return row_detail(self.mem, self.by_key[key])
