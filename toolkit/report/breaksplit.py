"""How many graphs one graph break inside an inlined submodule costs, and why.

Dynamo inlines a submodule's `forward` into the model's graph; a break inside it cannot be resumed
inside the inlined call, so torch ends the model's graph at the call, runs the submodule's frame on
its own (compiled in its own graphs, before and after the break: `torch_dynamo_resume_in_forward_at_15`)
and resumes the model after the call (`..._at_28`, the call's line). One break, four graphs. The
records say it: the entry stack of the submodule's own compile names the model's call line, and each
resume function is named after the line it resumes at.
"""

from __future__ import annotations

import re

from fxlens.trace.userfiles import is_user_file

_RESUME_AT = re.compile(r"^torch_dynamo_resume_in_\w+?_at_(\d+)$")


def _call_lines(stacks: dict, ids: list[str]) -> set[tuple[str, int]]:
    """(file, line) of the calls, inside another compiled frame, that entered the broken frame: the
    caller of each of its compiles, when the caller is a frame torch compiled too (the model whose
    graph the call ended), not the script's own call of the compiled model."""
    compiled = {(s[-1].file, s[-1].function) for s in stacks.values() if s}
    out = set()
    for cid in ids:
        user = [f for f in stacks.get(cid) or [] if is_user_file(f.file)]
        if len(user) >= 2 and (user[-2].file, user[-2].function) in compiled:
            out.add((user[-2].file, user[-2].line))
    return out


def break_split(session, group: dict) -> dict | None:
    """`{graphs, compile_ids, call_line, message}` when the break is inside a frame called from another
    compiled frame and costs more than two graphs; None otherwise."""
    rank = next(iter(group["ranks"]), None)
    model = next((r for r in session.rank_models if r.rank == rank), None)
    if model is None:
        return None
    calls = _call_lines(model.entry_stacks, group["compile_ids"])
    if not calls:
        return None
    resumes = calls | {(group["file"], group["line"])}
    ids = []
    for g in model.graphs:
        m = _RESUME_AT.match(g.co_name or "")
        resumed_here = m and (g.file, int(m.group(1))) in resumes
        if g.compile_id in group["compile_ids"] or resumed_here:
            ids.append(g.compile_id)
    if len(ids) <= 2:
        return None
    call_file, call_line = sorted(calls)[-1]
    code = session.source_line(call_file, call_line) if hasattr(session, "source_line") else ""
    message = (
        f"one break, {len(ids)} graphs: torch cannot resume inside the inlined call at line {call_line}"
        + (f" (`{code}`)" if code else "")
        + f", so it ends the caller's graph there, compiles the called `{group['function']}` on its own "
        "(graphs before and after the break) and resumes the caller after the call; moving the break "
        "out of that submodule keeps it one graph"
    )
    return {"graphs": len(ids), "compile_ids": ids, "call_line": call_line, "message": message}
