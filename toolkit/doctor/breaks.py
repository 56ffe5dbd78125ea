"""doctor's findings on graph breaks and on frames torch gave up on: where, what to change, and
what each one costs, measured.

A break's cost is the eager time between the graphs on either side of it, as a share of the
compiled call, read from a profile of the replayed call (fxlens.probe.segments): the frame that
broke has it as its own time less the graphs it called. A frame torch gave up on (after a break it
could not resume, or at the recompile limit) runs with no compiled region at all: its time is the
part of the call outside every compiled frame.

A break in a library's code (transformers, say) is placed at the user's line that reached it,
often the call of the compiled model itself: the message then names the library frame that broke,
and the fix is a switch the user can flip (LIBRARY_FIXES, or a torch config switch torch's hint
names), or says that it cannot be fixed from the user's code, naming the library and its version.
"""

from __future__ import annotations

import re
from importlib import metadata

from fxlens.backend.stages import capture_only
from fxlens.doctor.finding import code_action
from fxlens.doctor.finding import finding as _finding
from fxlens.doctor.finding import loc as _loc
from fxlens.doctor.finding import simple as _simple
from fxlens.report.fixes import BREAK_ACTIONS, action, break_text, config_action, describe, how
from fxlens.report.headlines import EAGER_FRAME_FIX
from fxlens.trace.userfiles import is_user_file, library_path

# (pattern on torch's graph-break reason, what to change) - first match wins
BREAK_FIXES: list[tuple[re.Pattern, str]] = [
    # torch._dynamo.graph_break() left in the code
    (re.compile(r"graph_break\(\)"), "remove the `torch._dynamo.graph_break()` call"),
    # print / logging inside the compiled region
    (
        re.compile(r"builtin operator|print", re.I),
        "move the `print`/logging out of the compiled function (or log tensors after it returns)",
    ),
    # .item() / float(tensor) read a Python number
    (
        re.compile(r"\.item\(\)|capture_scalar_outputs", re.I),
        "keep the value a tensor, or set `torch._dynamo.config.capture_scalar_outputs = True`",
    ),
    # .tolist() on a float tensor
    (re.compile(r"tolist", re.I), "keep the data in a tensor instead of calling `.tolist()`"),
    # `if tensor:` control flow on data
    (
        re.compile(r"data-dependent branch", re.I),
        "make it branchless (`torch.where`, `torch.clamp`) or use `torch.cond`",
    ),
    # a C function or a function on Dynamo's skip list
    (
        re.compile(r"skipped|C function|builtin", re.I),
        "move the call out of the compiled function, or compute it once outside and pass the result in",
    ),
]

# (pattern on the library file, pattern on its source line or torch's reason, the switch that
# avoids the break from the user's side) - first match wins; each row was seen on a real model
LIBRARY_FIXES: list[tuple[re.Pattern, re.Pattern, str]] = [
    # nn.Transformer's check of a causal mask given without `tgt_is_causal`/`is_causal`
    (
        re.compile(r"torch/nn/modules/transformer\.py"),
        re.compile(r"_detect_is_causal_mask|causal_comparison"),
        describe(action("causal_mask")),
    ),
    # Wav2Vec2-family feature encoder: `hidden_states.requires_grad = True` in training mode
    (
        re.compile(r"transformers/models/.*wav2vec2|hubert|wavlm|data2vec_audio"),
        re.compile(r"requires_grad = True"),
        "call `model.freeze_feature_encoder()` before compiling (the encoder then stops setting "
        "`requires_grad` inside forward); in eval mode the line does not run",
    ),
    # SpecAugment masking with numpy's RNG (`_compute_mask_indices`), in training mode only
    (
        re.compile(r"transformers/models/"),
        re.compile(r"np\.random|_compute_mask_indices|_mask_hidden_states|spec_aug"),
        "set `config.mask_time_prob = 0` and `config.mask_feature_prob = 0` (SpecAugment off) or "
        "mask the inputs outside the compiled model; in eval mode no mask is drawn",
    ),
    # LayerDrop: a random skip of each layer in training mode
    (
        re.compile(r"transformers/models/"),
        re.compile(r"skip_the_layer|layerdrop|dropout_probability"),
        "set `config.layerdrop = 0.0`: LayerDrop draws a random number per layer in training mode",
    ),
]

# a torch switch named in torch's own hint: `torch._dynamo.config.capture_scalar_outputs = True`
_TORCH_SWITCH = re.compile(r"`?(torch\._dynamo\.config\.\w+ = \w+)`?")
_SWITCH_PARTS = re.compile(r"torch\._dynamo\.config\.(\w+) = (\w+)")


def break_actions(
    reason: str, hints: list[str], fix: str, file=None, line=None, lib: dict | None = None
) -> list[dict]:
    """The fix of one break as actions: the row of the table `fxlens fix` reads breaks with (on
    torch's text and the library frame that broke), or the torch switch torch's hint names; else
    the change `fix` says, stated as code."""
    text = " ".join([reason, *hints, break_text({"library": lib})])
    acts = next((list(a) for pattern, a in BREAK_ACTIONS if pattern.search(text)), [])
    if not acts:
        for h in hints:
            if m := _SWITCH_PARTS.search(h):
                value = {"True": True, "False": False}.get(m.group(2), m.group(2))
                acts.insert(0, config_action(m.group(1), value, "breaks"))
                break
    if not any(how(a) == "code" for a in acts) and "torch._dynamo.config" not in fix:
        acts.append(code_action(fix, file, line))  # the change the text says, beside any switch that may do
    return acts


# torch's stock hints (torch/_dynamo/graph_break_hints.py) that say what kind of break it is, not
# what to change: never given as the fix
_NOT_A_FIX = re.compile(
    r"report an issue|file an issue|may result in an error when running in eager|likely to be a "
    r"Dynamo bug|may be difficult to debug|graph break is fundamental|caused by an earlier graph break"
)


def break_fix(reason: str, hints: list[str], source: str, fallback: str = "") -> str:
    """What to change for one graph break in the user's code: a rule, else torch's own hint (not its
    stock notes), else `fallback` (else: move the line out of the compiled function)."""
    for pattern, fix in BREAK_FIXES:
        if pattern.search(reason):
            return fix
    hint = next((h for h in hints if not _NOT_A_FIX.search(h)), "")
    return hint or fallback or f"move `{source.strip()}` out of the compiled function"


def _package(path: str) -> str:
    """`transformers 5.25.0` for `transformers/models/...` (the version installed here)."""
    top = (path or "?").split("/")[0]
    try:
        return f"{top} {metadata.version(top)}"
    except (metadata.PackageNotFoundError, ValueError):
        return top


def library_fix(lib: dict, reason: str, hints: list[str]) -> str:
    """What the user can do about a break inside a library: a switch, or that nothing in their code can."""
    code = f"{lib.get('code') or ''} {reason} {lib.get('function') or ''}"
    for where, what, fix in LIBRARY_FIXES:
        if where.search(lib.get("file") or "") and what.search(code):
            return fix
    switch = next((m.group(1) for h in hints if (m := _TORCH_SWITCH.search(h))), None)
    if switch:
        return f"set `{switch}` before compiling (a torch switch: it lets Dynamo trace this library code)"
    return (
        f"cannot be fixed from your code: the break is inside {_package(lib.get('file'))} "
        f"({_loc(lib.get('file'), lib.get('line'))}); a newer release of it or of torch may trace it, "
        "or compile a smaller region that does not include this code"
    )


def owner(rows: list[dict], file: str, function: str, call_path: list[dict]) -> dict | None:
    """The compiled function a graph break (or recompile) belongs to, matching the call path."""
    frames = [*call_path, {"file": file, "function": function}]
    for fr in frames:
        for row in rows:
            if row["file"] == fr.get("file") and _simple(row["function"]) == fr.get("function"):
                return row
    return rows[0] if len(rows) == 1 else None


def _segments(row: dict | None) -> dict | None:
    """The profile split of the row's compiled call, when it separates graphs from eager code."""
    seg = ((row or {}).get("timing") or {}).get("segments") or {}
    return seg if seg.get("call_ms") and "frames" in seg else None


def _unmeasured(row: dict | None) -> str:
    """Why a break in `row` has no measured share."""
    if row is None:
        return "its compiled function is not known"
    backend = row["options"].get("backend")
    if capture_only(backend):
        return f"backend={backend!r} runs each graph as plain aten calls, so graphs and eager code look alike"
    seg = ((row.get("timing") or {}).get("segments")) or {}
    if seg.get("error"):
        return f"the profile failed: {seg['error']}"
    if seg.get("call_ms"):
        return f"the profile shows no graph calls for backend={backend!r}, only its compiled frames"
    return "the call was not re-timed, so it was not profiled"


def _share(row: dict | None, compile_ids: list[str]) -> tuple[float, str]:
    """(ms lost over the run, the phrase saying how much of the call the break's eager time is)."""
    seg = _segments(row)
    if seg is None or not seg.get("graphs_seen"):
        return 0.0, f"its share of the call is not measured: {_unmeasured(row)}"
    eager = sum((seg["frames"].get(cid) or {}).get("eager_ms", 0.0) for cid in dict.fromkeys(compile_ids))
    share = eager / seg["call_ms"]
    cost = share * (row["compiled_ms"] or 0.0) * row["calls"]
    return cost, (
        # the share only: a profiled call runs slower than the timed one, its ms are not the table's
        f"the eager code it leaves between graphs takes this share of the compiled call ({share:.0%}, profiled)"
    )


def _place(b: dict) -> str:
    """Where a break is: the user's line, and the library frame inside it that broke."""
    lib = b.get("library")
    at = _loc(b["file"], b["line"])
    if not lib:
        return f"at {at}"
    src = f" `{b['source'].strip()}`" if b.get("source") else ""
    return (
        f"inside {lib.get('function') or '?'} at {_loc(lib.get('file'), lib.get('line'))}"
        + (f" (`{lib['code'].strip()}`)" if lib.get("code") else "")
        + f", reached from your line {at}{src}"
    )


def _library_frame(b: dict) -> dict | None:
    """The library frame a break happened in: the report's, else the innermost library frame of its
    call path (a bare "graph break" record names none itself)."""
    if b.get("library"):
        return b["library"]
    for fr in reversed(b.get("call_path") or []):
        if fr.get("file") and not is_user_file(fr["file"]):
            return {**fr, "file": library_path(fr["file"])}
    return None


def _reason(b: dict, failures: dict[str, str]) -> str:
    """torch's reason; a bare "graph break" gets the failed compile's own first line instead."""
    if b["reason"].strip().lower() != "graph break":
        return b["reason"]
    why = next((failures[c] for c in b.get("compile_ids") or () if failures.get(c)), "")
    return why.strip().split("\n")[0] or b["reason"]


def break_findings(
    rows: list[dict], breaks: list[dict], failures: dict[str, str] | None = None
) -> list[dict]:
    """One finding per deduplicated graph break, with its measured share of the compiled call.

    `failures`: compile id -> torch's fail reason of that compile (the report's per-compile rows)."""
    out = []
    for b in breaks:
        row = owner(rows, b["file"], b["function"], b.get("call_path") or [])
        cost, share = _share(row, b.get("compile_ids") or [])
        in_fn = f" in `{row['function']}` ({row['calls']} calls)" if row else ""
        lib = _library_frame(b)
        b = {**b, "library": lib, "reason": _reason(b, failures or {})}
        if lib:
            fix = library_fix(lib, b["reason"], b.get("hints") or [])
        elif row is not None and _simple(row["function"]) != b["function"]:
            # the user's frame is the caller of the compiled object, not code inside it: moving that
            # line "out of the compiled function" is no fix
            fix = (
                "the break is inside the compiled call, in code torch's record does not place: "
                "`fxlens report SESSION` (the session below) or TORCH_LOGS=graph_breaks shows its stack"
            )
        else:
            fix = break_fix(b["reason"], b.get("hints") or [], b.get("source") or "")
        out.append(
            _finding(
                "graph_break",
                f"graph break {_place(b)}{in_fn}: {b['reason']}; {share}"
                + (f" -- `{b['source']}`" if b.get("source") and not lib else ""),
                b["file"],
                b["line"],
                fix,
                cost,
                b["function"],
                break_actions(b["reason"], b.get("hints") or [], fix, b["file"], b["line"], lib),
            )
        )
    return out


def eager_frame_findings(rows: list[dict], frames: list[dict], limits: list[dict]) -> list[dict]:
    """Frames torch gave up on after a break it could not resume: they run eagerly on every call.

    Their time is the compiled call's time outside every compiled frame, shared evenly among the
    given-up frames (and recompile-limit hits) of the same function; the message says so."""
    per_row: dict[int, int] = {}
    owners = []
    for f in [*frames, *limits]:
        row = owner(rows, f["file"], f["function"], [])
        owners.append(row)
        if row is not None:
            per_row[id(row)] = per_row.get(id(row), 0) + 1
    out = []
    for f, row in zip(frames, owners, strict=False):
        cost, measured = outside_cost(row, per_row.get(id(row), 1))
        fr = f.get("frame") or {}
        lib = f.get("library")
        fix = (
            library_fix(lib, f["reason"], f.get("hints") or [])
            if lib
            else break_fix(f["reason"], f.get("hints") or [], f.get("source") or "", EAGER_FRAME_FIX)
        )
        out.append(
            _finding(
                "eager_frame",
                f"torch gave up on frame `{fr.get('function') or f['function']}` "
                f"({_loc(fr.get('file'), fr.get('line'))}) after a graph break it could not resume "
                f"({f['reason']}, {_place(f)}): it runs eagerly on every call from compile "
                f"{f['compile_id']} on; {measured}",
                f["file"],
                f["line"],
                fix,
                cost,
                f["function"],
                break_actions(f["reason"], f.get("hints") or [], fix, f["file"], f["line"], lib),
            )
        )
    return out


def outside_cost(row: dict | None, n: int = 1) -> tuple[float, str]:
    """(ms over the run, phrase) for code that ran outside every compiled frame, split n ways."""
    seg = _segments(row)
    if seg is None:
        return 0.0, f"its share of the call is not measured: {_unmeasured(row)}"
    outside = seg.get("outside_regions_ms") or 0.0
    cost = outside / seg["call_ms"] * (row["compiled_ms"] or 0.0) * row["calls"] / n
    return cost, (
        "code outside every compiled frame takes this share of the compiled call "
        f"({outside / seg['call_ms']:.0%}, profiled"
        + (f"; shared by the {n} frames torch gave up on" if n > 1 else "")
        + ")"
    )


def breaks_per_owner(rows: list[dict], breaks: list[dict]) -> dict[int, int]:
    """id(row) -> graph breaks in that compiled function."""
    out: dict[int, int] = {}
    for b in breaks:
        if (o := owner(rows, b["file"], b["function"], b.get("call_path") or [])) is not None:
            out[id(o)] = out.get(id(o), 0) + 1
    return out
