"""inductor's kernel compile seconds by kernel (one fused group each), with the source lines its
nodes came from, where torch logs them.

What torch 2.13 logs, and what it does not:
- Triton kernels (GPU): compilation_metrics' `triton_kernel_compile_times_us`, the compile seconds
  of each kernel by name (torch keeps the 25 dearest per compile), beside `triton_compile_time_us`,
  the compile's wall time waiting for them. The output code names each kernel's fused nodes and,
  with provenance tracking on, the source line of each (fxlens.report.outputcode).
- C++ kernels (CPU): nothing per kernel. Each build is a `compile_file` event that names neither the
  kernel nor its file, and a build run in inductor's compile worker pool carries no compile id; the
  compile's total is its `async_compile.wait` (and `compile_file` events), by pass in
  fxlens.report.passes.

Read with each compile's compilation_metrics record (fxlens.trace.metrics_record): no pass of its
own over the logs. Pure Python.
"""

from __future__ import annotations

import re

NOT_LOGGED = (
    "inductor's compile seconds by kernel come from torch's `triton_kernel_compile_times_us` (Triton "
    "kernels, GPU); torch 2.13 logs none per C++ kernel (CPU): its `compile_file` events name no "
    "kernel, and a build in the compile worker pool carries no compile id"
)


def kernel_compile(session, output_code: list[dict]) -> dict:
    """The report's `kernel_compile`: per compile, each kernel's compile seconds (torch's, read with
    its compilation_metrics record), its fused nodes and the source lines they came from."""
    kernels = {(e["compile_id"], r): e["kernels"] for e in output_code for r in e["ranks"]}
    rows = []
    for rank in session.ranks:
        for m in rank.metrics:
            if m.triton_kernels_us:
                known = {k["name"]: k for k in kernels.get((m.compile_id, rank.rank), [])}
                rows.append(_row(m.compile_id, rank.rank, m.triton_compile_us, m.triton_kernels_us, known))
    if not rows:
        return {"available": False, "note": NOT_LOGGED}
    return {"available": True, "note": NOT_LOGGED, "per_compile": rows}


def _row(cid: str, rank, total_us, per: list, known: dict) -> dict:
    total = (total_us or 0) / 1e6
    listed = []
    for name, us in per:
        k = known.get(name) or {}
        listed.append(
            {
                "name": name,
                "seconds": round(us / 1e6, 6),
                "share": round(us / 1e6 / total, 4) if total else None,
                "post_grad_nodes": k.get("post_grad_nodes") or [],
                "lines": _lines(k.get("stack") or []),
            }
        )
    listed.sort(key=lambda k: -k["seconds"])
    return {
        "compile_id": cid,
        "rank": rank,
        "triton_compile_s": round(total, 6) if total_us is not None else None,
        "kernels_s": round(sum(k["seconds"] for k in listed), 6),
        "kernels": listed,
    }


_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)')


def _lines(stack: list[str]) -> list[str]:
    """`file:line` of the innermost frame of each provenance stack of a kernel's nodes, in order
    (a kernel fused from several lines names each)."""
    out = []
    for s in stack:
        frames = list(_FRAME.finditer(s))
        if frames:
            out.append(f"{frames[-1]['file']}:{frames[-1]['line']}")
    return list(dict.fromkeys(out))


def kernel_compile_section(report: dict, limit: int = 10) -> list:
    """The dearest kernels to compile, per compile, as one Section with a table."""
    from fxlens.report.document import Section, Table

    sec = report.get("kernel_compile") or {}
    if not sec.get("available"):
        return []
    rows = [
        [r["compile_id"], k["name"], f"{k['seconds']:.3f}", f"{k['share']:.0%}" if k["share"] is not None else "-",
         ", ".join(ln.rsplit("/", 1)[-1] for ln in k["lines"])]
        for r in sec["per_compile"]
        for k in r["kernels"][:limit]
    ]  # fmt: skip
    table = Table(["compile", "kernel", "compile s", "of triton s", "source lines"], rows, numbers=False)
    return [
        Section("inductor's kernel compile seconds, by kernel", [table], gloss="torch's compilation metrics")
    ]
