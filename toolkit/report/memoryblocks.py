"""doctor's memory by cause as document blocks (fxlens.report.document): the report's Markdown and
HTML show the same parts as doctor's text and the TUI (fxlens.report.memorytext), as tables.

A session doctor ran holds its result as a `doctor` event (DoctorResult); its `peak_memory` has the peak RSS
difference in parts that add up to it, and per compiled function the tensor peak difference in
parts, the largest saved tensors and the tensors the compiled code holds named with their line.
"""

from __future__ import annotations

from fxlens.report.document import Code, Heading, Para, Table
from fxlens.report.markup import PathShortener
from fxlens.report.memorytext import PART_NAMES, mib


def _where(ps: PathShortener, item: dict) -> list:
    if not item.get("file"):
        return []
    return [" at ", Code(f"{ps.path(item['file'])}:{item.get('line')}")]


def _detail(part: dict, ps: PathShortener) -> list:
    """What a part is made of: the largest saved or held tensor, with its op or name and line."""
    if part["cause"] == "saved_activations":
        top = (part.get("compiled_top") or [{}])[0]
        said = [f"{mib(part['eager'])} eager -> {mib(part['compiled'])} compiled"]
        if top.get("op"):
            said += ["; largest ", Code(str(top.get("shape"))), " ", Code(top["op"]), *_where(ps, top)]
        return said
    if part["cause"] == "held_by_compiled_code" and "cache_entries" in part:
        big = (part.get("largest") or [{}])[0]
        n = part["cache_entries"]
        said = [f"{part.get('entries_holding', 0)} of {n} cache entr{'y' if n == 1 else 'ies'}"]
        if big:
            said += [
                "; largest ",
                Code(big.get("name") or "?"),
                " ",
                Code(str(big.get("shape"))),
                *_where(ps, big),
            ]
        return said
    return [ps.text(part.get("what", ""))]


def memory_blocks(mem: dict, ps: PathShortener) -> list:
    """The breakdown of doctor's `peak_memory` as a heading and tables; nothing when it holds none
    (DoctorResult.blocks)."""
    if not mem or not (mem.get("breakdown") or mem.get("functions")):
        return []
    kind = "CUDA allocator" if mem.get("kind") == "cuda_allocator" else "process RSS"
    out: list = [
        Heading(2, "Memory by cause (fxlens doctor)"),
        Para(f"Peak memory ({kind}): eager {mib(mem.get('eager'))}, compiled {mib(mem.get('compiled'))}."),
    ]
    if mem.get("breakdown"):
        total = (mem.get("compiled") or 0) - (mem.get("eager") or 0)
        out.append(
            Para(f"Compiled - eager = {mib(total)}, in parts that add up to it (the remainder shown):")
        )
        out.append(
            Table(
                ["part", "bytes"],
                [[PART_NAMES.get(p["cause"], p["cause"]), mib(p["bytes"])] for p in mem["breakdown"]],
            )
        )
    for f in mem.get("functions") or []:
        both = " (forward and backward)" if f.get("backward") else ""
        out.append(Heading(3, f"{f['function']}: tensor peak per call{both}"))
        out.append(
            Para(
                f"eager {mib(f['eager']['peak'])}, compiled {mib(f['compiled']['peak'])} + "
                f"{mib(f['compiled']['held'])} held: difference {mib(f['difference'])}"
            )
        )
        rows = [[PART_NAMES.get(p["cause"], p["cause"]), mib(p["bytes"]), _detail(p, ps)] for p in f["parts"]]
        out.append(Table(["part", "bytes", ""], rows))
    return out
