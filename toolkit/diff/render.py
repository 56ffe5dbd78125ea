"""The diff as text (the terminal, the TUI's Diff view) and as document blocks (Markdown / HTML)."""

from __future__ import annotations

from fxlens.diff.compiletime import compile_time_line
from fxlens.report.document import Bold, Bullets, Code, Details, Heading, Para, Pre, Table
from fxlens.report.markup import PathShortener, visible
from fxlens.report.texttable import tabulate

MARK = {"new": "+ new", "gone": "- gone", "changed": "~ changed", "moved": "> moved", "same": "  same"}


def _side_name(side: dict) -> str:
    return PathShortener().path(side.get("path") or "?")


def _loc(file: str | None, line: int | None) -> str:
    """FILE:LINE, or as much of it as is known (never `?:None`)."""
    if not file or file == "?":
        return f"line {line}" if line else "(no source location)"
    return f"{file}:{line}" if line else file


def _where(item: dict) -> str:
    """Where a row is: a gone item at A's own file and line, a new one at B's, a moved one at both."""
    a, b = item.get("a") or {}, item.get("b") or {}
    fa, fb = a.get("file") or item.get("file"), b.get("file") or item.get("file")
    if item["status"] == "gone":
        return _loc(fa, a.get("line", item.get("line")))
    if item["status"] == "moved" and (a.get("line"), fa) != (b.get("line"), fb):
        if fa == fb:
            return f"{_loc(fa, a.get('line'))} -> {b.get('line')}"
        return f"{_loc(fa, a.get('line'))} -> {_loc(fb, b.get('line'))}"
    return _loc(fb, b.get("line", item.get("line")))


def clip_text(text: str, width: int | None) -> str:
    """TEXT cut to WIDTH at a word boundary, the cut said by an ellipsis (never mid-word, never silent)."""
    text = text or ""
    if width is None or len(text) <= width:
        return text
    head = text[: width - 3]
    if " " in head[width // 2 :]:
        head = head[: head.rindex(" ")]
    return head.rstrip(" ,;:") + "..."


def _ab(item: dict, field: str) -> str:
    a, b = item.get("a"), item.get("b")
    va = "-" if a is None else a.get(field)
    vb = "-" if b is None else b.get(field)
    return f"{va}" if va == vb else f"{va} -> {vb}"


def failures(diff: dict) -> list[str]:
    """The lines said before anything else: a side whose script failed or compiled nothing."""
    return [
        f"{side.upper()} FAILED: {why} ({_side_name(diff[side])})"
        for side in ("a", "b")
        if (why := (diff.get("failed") or {}).get(side))
    ]


def verdict(diff: dict) -> str:
    """One line: is B worse than A, and on which counts (a failed side first: its counts mean nothing)."""
    deltas = {c["name"]: c["delta"] for c in diff["counts"]}
    failed = [s.upper() for s in ("a", "b") if (diff.get("failed") or {}).get(s)]
    if failed and not diff.get("allow_failed"):
        return (
            f"{' and '.join(failed)} FAILED: {'their' if len(failed) > 1 else 'its'} counts cannot be "
            "compared (--allow-failed compares them anyway)"
        )
    if diff.get("compiled_from_nothing") and not diff["worse"]:
        return (
            "B is better than A: A captured no graph (everything ran eagerly), B compiles "
            f"{next(c['b'] for c in diff['counts'] if c['name'] == 'graphs')} graph(s)"
        )
    if diff.get("compiled_to_nothing"):
        return (
            "B is WORSE than A: B captured no graph (everything ran eagerly), A compiled "
            f"{next(c['a'] for c in diff['counts'] if c['name'] == 'graphs')} graph(s)"
        )
    if diff["worse"]:
        return "B is WORSE than A: " + ", ".join(_worse(diff, n, deltas) for n in diff["worse_on"])
    if diff["better_on"]:
        return (
            "B is no worse than A (better: "
            + ", ".join(f"{n} {deltas[n]:+d}" for n in diff["better_on"])
            + ")"
        )
    return "B is no worse than A: no count changed"


def _worse(diff: dict, name: str, deltas: dict) -> str:
    if name == "compile_s":  # not a count: B's compile CPU seconds over A's, beyond the noise band
        j = diff["compile_time"]["judged"]
        return f"compile time x{j['ratio']:.2f} (CPU seconds, band +{j['band']:.0%})"
    return f"{name} {deltas[name]:+d}"


def _changed(items: list[dict], show_same: bool) -> list[dict]:
    return [i for i in items if show_same or i["status"] != "same"]


Section = tuple[str, list[str], list[list]]


def _counts_section(diff: dict, show_same: bool, cut) -> Section:
    rows = [
        [
            c["name"],
            c["a"],
            c["b"],
            f"{c['delta']:+d}" if c["delta"] else "",
            "better (A compiled nothing)"
            if c.get("from_nothing")
            else "WORSE (B compiled nothing)"
            if c.get("to_nothing")
            else "WORSE"
            if c["gated"] and c["delta"] > 0
            else ("" if c["gated"] else "(not gated)"),
        ]
        for c in diff["counts"]
    ]
    return ("Counts", ["count", "A", "B", "delta", ""], rows)


def _break_section(diff: dict, show_same: bool, cut) -> Section | None:
    b = _changed(diff["graph_breaks"], show_same)
    if not b:
        return None
    return (
        "Graph breaks (matched by function, file, line and reason)",
        ["", "where", "function", "count", "reason"],
        [[MARK[i["status"]], _where(i), i["function"], _ab(i, "count"), cut(i["reason"])] for i in b],
    )


def _cause_section(diff: dict, show_same: bool, cut) -> Section | None:
    c = _changed(diff["recompile_causes"], show_same)
    if not c:
        return None
    return (
        "Recompiles, by root cause",
        ["", "where", "function", "recompiles", "cause"],
        [
            [
                MARK[i["status"]],
                _where(i),
                i["function"],
                _ab(i, "count"),
                _cause_text(i, cut),
            ]
            for i in c
        ],
    )


def _cause_text(item: dict, cut) -> str:
    """The cause as each side words it: both when it changed (A's, then B's), else the one there is."""
    a, b = item.get("a") or {}, item.get("b") or {}
    ma, mb = a.get("message"), b.get("message")
    if ma and mb and ma != mb:
        return f"A: {cut(ma)} -> B: {cut(mb)}"
    return cut(mb or ma or "")


def _limit_section(diff: dict, show_same: bool, cut) -> Section | None:
    lim = _changed(diff["recompile_limit_hits"], show_same)
    if not lim:
        return None
    return (
        "Recompile limit hits",
        ["", "where", "function", "limit"],
        [[MARK[i["status"]], _where(i), i["function"], _ab(i, "limit")] for i in lim],
    )


def _failure_section(diff: dict, show_same: bool, cut) -> Section | None:
    f = _changed(diff["failures"], show_same)
    if not f:
        return None
    return (
        "Compile failures",
        ["", "where", "function", "type", "count"],
        [[MARK[i["status"]], _where(i), i["function"], i["fail_type"], _ab(i, "count")] for i in f],
    )


def _function_section(diff: dict, show_same: bool, cut) -> Section | None:
    fn = _changed(diff["functions"], show_same)
    if not fn:
        return None
    rows = [
        [
            MARK[i["status"]],
            _where(i),
            i["function"],
            _ab(i, "graphs"),
            _ab(i, "graph_nodes"),
            _ab(i, "guards"),
            _ab(i, "kernels"),
            _fmt_pair(i["compile_s"], ".2f"),
        ]
        for i in fn
    ]
    return (
        "Graphs per function",
        ["", "where", "function", "graphs", "nodes", "guards", "kernels", "compile s"],
        rows,
    )


def _fallback_section(diff: dict, show_same: bool, cut) -> Section | None:
    fbs = [x for x in diff["fallbacks"] if show_same or x["status"] != "same"]
    if not fbs:
        return None
    return (
        "fxlens fallbacks (ops run as ATen calls)",
        ["", "op", "count"],
        [[MARK[x["status"]], x["op"], f"{x['a']} -> {x['b']}"] for x in fbs],
    )


def _doctor_section(diff: dict, show_same: bool, cut) -> Section | None:
    if not diff.get("doctor"):
        return None
    rows = [
        [
            d["file"],
            d["function"],
            _fmt_pair(d["eager_ms"], ".3f"),
            _fmt_pair(d["compiled_ms"], ".3f"),
            _fmt_pair(d["speedup"], ".2f"),
            _fmt_pair(d["compile_s"], ".2f"),
        ]
        for d in diff["doctor"]
    ]
    return (
        "Doctor timings (both sessions have them)",
        ["file", "function", "eager ms", "compiled ms", "speedup", "compile s"],
        rows,
    )


def _memory_section(diff: dict, show_same: bool, cut) -> Section | None:
    """doctor's peak memory and the parts of its compiled - eager difference, A -> B."""
    rows = [r for r in diff.get("doctor_memory") or [] if show_same or r["a"] != r["b"]]
    if not rows:
        return None

    def mib(n) -> str:
        return "-" if n is None else f"{n / (1 << 20):.1f}"

    return (
        "Doctor memory, MiB (peaks, and the parts of compiled - eager)",
        ["", "A", "B"],
        [[r["what"], mib(r["a"]), mib(r["b"])] for r in rows],
    )


#: the sections in the order they are shown; each is None when it has nothing to show
SECTIONS = (
    _counts_section,
    _break_section,
    _cause_section,
    _limit_section,
    _failure_section,
    _function_section,
    _fallback_section,
    _doctor_section,
    _memory_section,
)


def sections(diff: dict, show_same: bool = False, clip: int | None = 90) -> list[Section]:
    """(title, headers, rows) of every non-empty section, in the order they are shown.

    Args:
        diff: the dict of `compare`.
        show_same: also list items that are the same in both.
        clip: longest reason / cause shown (a terminal's width); None: whole (Markdown, HTML, TUI).
    """

    def cut(text: str) -> str:
        return clip_text(text, clip)

    return [s for make in SECTIONS if (s := make(diff, show_same, cut)) is not None]


def _fmt_pair(p: dict, fmt: str) -> str:
    f = lambda v: "-" if v is None else format(v, fmt)  # noqa: E731
    return f"{f(p.get('a'))} -> {f(p.get('b'))}"


MAX_GUARD_FUNCTIONS = 10  # functions whose guard changes are listed (the rest: "N more")
MAX_GUARD_LINES = 8  # new (and gone) guard lines listed per function in text


def _middle(text: str, width: int = 150) -> str:
    """Clip the middle: a guard's subject is at its start, the value that changed at its end."""
    return text if len(text) <= width else f"{text[: width // 3]} ... {text[-(width - width // 3 - 5) :]}"


def render_text(diff: dict, show_same: bool = False) -> str:
    """The diff as terminal text: counts, then what is new, gone, changed or moved, then the verdict."""
    out = [f"fxlens diff: A = {_side_name(diff['a'])}", f"             B = {_side_name(diff['b'])}", ""]
    if lines := failures(diff):  # said first: a failed side's counts read as "better" otherwise
        out += [*lines, ""]
    for title, headers, rows in sections(diff, show_same):
        out += [f"{title}:", tabulate(rows, headers=headers, tablefmt="simple"), ""]
    for g in diff["guards"][:MAX_GUARD_FUNCTIONS]:
        out.append(f"Guards of {g['function']} ({g['file']}): {len(g['new'])} new, {len(g['gone'])} gone")
        # every cut is said: "9 new" over 8 listed lines read as a miscount (rule: never cut silently)
        for mark, lines in (("+", g["new"]), ("-", g["gone"])):
            out += [f"  {mark} {_middle(x)}" for x in lines[:MAX_GUARD_LINES]]
            if len(lines) > MAX_GUARD_LINES:
                out.append(f"  {mark} ... {len(lines) - MAX_GUARD_LINES} more (see --json)")
    if len(diff["guards"]) > MAX_GUARD_FUNCTIONS:
        out.append(f"... guards of {len(diff['guards']) - MAX_GUARD_FUNCTIONS} more function(s) (see --json)")
    if diff["guards"]:
        out.append("")
    if line := compile_time_line(diff["compile_time"]):
        out += [line, ""]
    out.append(f"verdict: {verdict(diff)}")
    # trace strings reach a terminal here: a `\x1b[...` in a reason must not recolour it
    return visible("\n".join(out) + "\n")


def diff_blocks(diff: dict) -> list:
    """The diff as document blocks (Markdown / HTML); strings are escaped by the renderer."""
    out: list = [
        Heading(2, "fxlens diff"),
        Bullets([["A: ", Code(_side_name(diff["a"]))], ["B: ", Code(_side_name(diff["b"]))]]),
        *[Para(Bold(line)) for line in failures(diff)],
        Para(Bold(verdict(diff))),
    ]
    for title, headers, rows in sections(diff, clip=None):
        code = {j for j, name in enumerate(headers) if name in ("where", "function", "op", "file")}
        out += [
            Heading(3, title),
            Table(headers, [[Code(str(c)) if j in code else str(c) for j, c in enumerate(r)] for r in rows]),
        ]
    for g in diff["guards"][:MAX_GUARD_FUNCTIONS]:
        lines = [f"+ {x}" for x in g["new"]] + [f"- {x}" for x in g["gone"]]
        out.append(
            Details(
                f"Guards of {g['function']} ({g['file']}): {len(g['new'])} new, {len(g['gone'])} gone",
                [Pre("\n".join(lines), "diff")],
            )
        )
    if line := compile_time_line(diff["compile_time"]):
        out.append(Para(line))
    if len(diff["guards"]) > MAX_GUARD_FUNCTIONS:
        out.append(
            Para(f"Guards of {len(diff['guards']) - MAX_GUARD_FUNCTIONS} more function(s): see --json.")
        )
    return out
