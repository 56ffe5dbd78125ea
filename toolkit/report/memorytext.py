"""The "memory by cause" tables of a doctor result: the peak RSS difference and each function's
tensor peak difference, each in parts that add up to it (made by fxlens.doctor.memcauses). Here, in
the report layer, so that doctor's text and the TUI's results view print the same lines."""

from __future__ import annotations

from fxlens.report.texttable import tabulate
from fxlens.trace.userframes import short_path


def mib(n: int | None) -> str:
    return "?" if n is None else f"{n / (1 << 20):+.1f} MiB" if n < 0 else f"{n / (1 << 20):.1f} MiB"


def loc(file: str | None, line: int | None) -> str:
    return f"{short_path(file)}:{line}" if file else "?"


PART_NAMES = {
    "before_script": "before the script (imports)",
    "compiler": "while compiling (the compiler's own)",
    "held_by_compiled_code": "held by the compiled code",
    "call_tensors": "call tensors (largest call's peak difference)",
    "saved_activations": "activations saved for backward",
    "remainder": "remainder",
}


def _saved_detail(part: dict) -> str:
    top = (part.get("compiled_top") or [{}])[0]
    if not top.get("op"):
        return f"{mib(part['eager'])} eager -> {mib(part['compiled'])} compiled"
    return (
        f"{mib(part['eager'])} eager -> {mib(part['compiled'])} compiled; largest {top.get('shape')} "
        f"{top['op']} at {loc(top.get('file'), top.get('line'))}"
    )


def _held_detail(part: dict) -> str:
    big = (part.get("largest") or [{}])[0]
    if not big:
        return f"{part['cache_entries']} cache entr{'y' if part['cache_entries'] == 1 else 'ies'}"
    where = f" at {loc(big.get('file'), big.get('line'))}" if big.get("line") else ""
    return (
        f"{part['entries_holding']} of {part['cache_entries']} cache entries; largest "
        f"`{big.get('name') or '?'}` {big.get('shape')}{where}"
    )


def _detail(part: dict) -> str:
    if part["cause"] == "saved_activations":
        return _saved_detail(part)
    if part["cause"] == "held_by_compiled_code" and "cache_entries" in part:
        return _held_detail(part)
    return part.get("what", "")


def memory_lines(mem: dict) -> list[str]:
    """The breakdown as text; nothing when doctor measured none (no replay)."""
    out = []
    if mem.get("breakdown"):
        total = (mem["rss"]["compiled"] or 0) - (mem["rss"]["eager"] or 0)
        rows = [[PART_NAMES.get(p["cause"], p["cause"]), mib(p["bytes"])] for p in mem["breakdown"]]
        out += [
            f"Memory by cause: peak RSS compiled - eager = {mib(total)}, in parts that add up to it:",
            tabulate(rows, headers=["part", "bytes"], tablefmt="simple"),
        ]
        if mem["breakdown"][-1]["bytes"] < 0:
            out.append(
                "(a remainder below 0: compiling had already raised the peak that eager reached "
                "while running)"
            )
        out.append("")
    for f in mem.get("functions") or []:
        head = (
            f"`{f['function']}` tensor peak per call{' (forward and backward)' if f['backward'] else ''}: "
            f"eager {mib(f['eager']['peak'])}, compiled {mib(f['compiled']['peak'])} + "
            f"{mib(f['compiled']['held'])} held: difference {mib(f['difference'])}"
        )
        rows = [[PART_NAMES.get(p["cause"], p["cause"]), mib(p["bytes"]), _detail(p)] for p in f["parts"]]
        out += [head, tabulate(rows, headers=["part", "bytes", ""], tablefmt="simple"), ""]
    if mem.get("cost") and mem.get("functions"):
        c = mem["cost"]
        out.append(
            f"(memory measured after the script in {c['seconds']:.2f} s; profiled calls {c['profiled_s']:.3f} s "
            f"vs {c['plain_s']:.3f} s unprofiled)"
        )
        out.append("")
    return out
