"""The verdicts a report leads with, when the tables alone would hide them.

- torch.compile was called (or Dynamo started on a frame) but no graph was captured: everything
  ran eagerly, whatever the other sections say;
- frames torch gave up on after a graph break it could not resume: they run eagerly from that
  compile on;
- frames that hit the recompile limit (the same, for recompiles).

Each headline is `{kind, message, fix}`; the report's text and markdown print them first.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from functools import lru_cache
from pathlib import Path

from fxlens.report.failures import library_frame
from fxlens.trace.userframes import short_path

_DDP_FILE = "torch/nn/parallel/distributed.py"


@lru_cache(maxsize=1)
def _gb_registry() -> dict:
    """torch's graph-break registry (torch/_dynamo/graph_break_registry.json), read as a file: the
    report never imports torch. Empty when this machine's torch has none (the trace may come from
    another machine; the id is kept either way)."""
    try:
        spec = importlib.util.find_spec("torch")
        if not spec or not spec.origin:
            return {}
        path = Path(spec.origin).parent / "_dynamo" / "graph_break_registry.json"
        return json.loads(path.read_text()) if path.is_file() else {}
    except (OSError, ValueError, ImportError):
        return {}


def gb_doc(gb_id: str) -> dict | None:
    """The registry's entry for a graph-break id: its type, explanation and hints (torch's text)."""
    entries = _gb_registry().get(gb_id) if gb_id else None
    if not entries:
        return None
    e = entries[0] if isinstance(entries, list) else entries
    if not isinstance(e, dict):
        return None
    return {
        "type": e.get("Gb_type", ""),
        "explanation": e.get("Explanation", ""),
        "hints": e.get("Hints", []),
    }


def _compile_calls(report: dict) -> list[dict]:
    return [ev for ev in report.get("events", []) if ev.get("event") == "compile_call"]


def _is_ddp(report: dict, session) -> bool:
    """Whether the compiled code was DistributedDataParallel's own forward (torch.compile(DDP(m)))."""
    if any(_DDP_FILE in ((b.get("library") or {}).get("file") or "") for b in report["graph_breaks"]):
        return True
    names = [m["function"] for m in report["compile_times"]["per_compile"]]
    names += [r["function"] for r in report["recompiles"]]
    return any(n.startswith("DistributedDataParallel.") for n in names)


def _no_graph(report: dict, session) -> dict | None:
    attempts = report["compile_times"]["per_compile"]
    calls = _compile_calls(report)
    if report["graphs"] or not (attempts or calls):
        return None
    if report.get("aot_inductor") or report.get("export_issues"):
        return None  # compiled without Dynamo (AOTInductor, export): there was no frame to capture
    where = ""
    if calls:
        c = calls[0]
        where = f" (torch.compile at {short_path(c.get('file') or '?')}:{c.get('line')})"
    n = len(attempts)
    generators = [e for e in report.get("events", []) if e.get("event") == "compile_generator"]
    if generators and not n:  # Dynamo refused them before any compile was logged
        g = generators[0]
        return {
            "kind": "no_graph",
            "message": f"torch.compile captured no graph: everything ran eagerly{where}. "
            f"`{g.get('name')}` is a generator function, which Dynamo refuses to trace (torch: "
            '"Attempt to trace generator: Generators cannot be compiled directly with `torch.compile`")',
            "fix": "torch's hint: call the generator from inside a non-generator function and compile that "
            "function instead (or compile what each step of the generator computes)",
        }
    if n:
        why = f"Dynamo started on {n} frame(s) and every one ended without a graph"
    else:
        why = "Dynamo never started on a frame: the compiled function was never called, or it was disabled"
    message = f"torch.compile captured no graph: everything ran eagerly{where}. {why}."
    fix = "look at the graph breaks and failures below: each one stopped a graph"
    if _is_ddp(report, session):
        fix = (
            "torch.compile(DDP(model)) broke inside DDP's own forward here: compile the module, "
            "then wrap it: `model = DDP(torch.compile(model))`"
        )
    elif not n:
        fix = (
            "call the compiled function (the object torch.compile returned), and check TORCH_COMPILE_DISABLE"
        )
        fix = next((f for c in calls if (f := bypass_fix(c.get("file"), c.get("line")))), fix)
    return {"kind": "no_graph", "message": message, "fix": fix}


def bypass_fix(file: str | None, line: int | None) -> str | None:
    """The fix when the object torch.compile returned at FILE:LINE is used through a method of the
    original module (`compiled.generate(...)`), so none of it runs compiled; None when it is not."""
    bypass = _bypassing_call(file, line)
    if not bypass:
        return None
    name, method, at, path = bypass
    return (
        f"`{name}.{method}(...)` at {short_path(path)}:{at} runs the original module: the object "
        f"torch.compile returns compiles only its own calls (forward), and `.{method}` is the "
        f"module's method, reached through it uncompiled; compile what `{method}` calls instead: "
        f"`model.compile()` (in place), or `model.forward = torch.compile(model.forward)`, then "
        f"call `model.{method}(...)`"
    )


# `name = torch.compile(...)` on the line torch.compile was called from
_ASSIGNED = re.compile(r"^\s*(?P<name>[A-Za-z_][\w.]*)\s*=\s*torch\.compile\(")
# nn.Module's bookkeeping, reached through the compiled object without computing anything
_BOOKKEEPING = {
    "forward", "parameters", "named_parameters", "buffers", "named_buffers", "modules", "named_modules",
    "children", "named_children", "state_dict", "load_state_dict", "train", "eval", "to", "cpu", "cuda",
    "half", "float", "double", "bfloat16", "zero_grad", "requires_grad_", "apply", "compile", "get_submodule",
}  # fmt: skip
MAX_SCRIPT_BYTES = 4 << 20


def _bypassing_call(file: str | None, line: int | None) -> tuple[str, str, int, str] | None:
    """(name, method, line, file) of the first `name.method(` after `name = torch.compile(...)` at
    FILE:LINE that calls a method of the original module rather than the compiled object
    (`compiled.generate(...)`): the classic way to compile a model and run none of it compiled."""
    try:
        if not file or not line or os.path.getsize(file) > MAX_SCRIPT_BYTES:
            return None
        lines = Path(file).read_text(errors="replace").splitlines()
    except OSError:
        return None
    m = _ASSIGNED.match(lines[line - 1]) if 0 < line <= len(lines) else None
    if not m:
        return None
    use = re.compile(rf"(?<![\w.]){re.escape(m['name'])}\.(\w+)\(")
    for i, text in enumerate(lines[line:], line + 1):
        for method in use.findall(text.split("#", 1)[0]):
            if method not in _BOOKKEEPING and not method.startswith("_"):
                return m["name"], method, i, file
    return None


# what to do about a frame torch gave up on after a break it could not resume, in the user's code
EAGER_FRAME_FIX = (
    "move that call out of the compiled function (or out of the with/try block it is in, which "
    "torch cannot resume a graph across)"
)


def _eager_frames(report: dict) -> list[dict]:
    out = []
    for e in report.get("eager_frames", []):
        where = f"{short_path(e['file'])}:{e['line']}" if e["file"] else "?"
        frame, lib = library_frame(e), e.get("library")
        if frame:  # the frame torch gave up on is a library's, called from the user's line
            name = f"`{frame['function']}` ({short_path(frame['file'])}:{frame['line']}, called from {where})"
        else:
            name = f"`{(e.get('frame') or e)['function']}` ({where})"
        at = f"{lib['file']}:{lib['line']}" if lib else where
        fix = EAGER_FRAME_FIX
        if lib:  # the code that broke is the library's: the user cannot move it, torch's hint may help
            hint = (e.get("hints") or [None])[0]
            fix = f"the break is in {lib['file']}, not your code; " + (
                f"torch's hint: {hint}" if hint else "compile the code around that call instead"
            )
        out.append(
            {
                "kind": "eager_frame",
                "message": f"frame {name} runs eagerly from compile {e['compile_id']} on: torch could not "
                f"resume after `{e['reason']}` at {at}",
                "fix": fix,
            }
        )
    return out


def _limit_hits(report: dict) -> list[dict]:
    return [
        {
            "kind": "recompile_limit",
            "message": f"frame {h['function']} hit the {h['limit_type']} ({h['limit']}) at compile "
            f"{h['compile_id']}: it runs eagerly from then on",
            "fix": "see the recompile causes: the fix for the cause removes the limit hit",
        }
        for h in report["recompile_limit_hits"]
    ]


def _backend_switched(report: dict) -> list[dict]:
    """torch.compile ran another backend than the script asked for (a CompilerBisector leftover,
    TORCH_BISECT_BACKEND, TORCH_COMPILE_BACKEND; fxlens.capture.backend_switch): every verdict
    below is about that backend."""
    events = report.get("events") or []
    asked = sorted(
        {str(e.get("backend")) for e in events if e.get("event") == "compile_call" and e.get("backend")}
    )
    out = []
    for e in events:
        if e.get("event") != "backend_switch" or (asked and e.get("backend") in asked):
            continue
        what = f"{', '.join(asked)} (what the script asked for)" if asked else "what the script asked for"
        out.append(
            {
                "kind": "backend_switched",
                "message": f"torch.compile ran backend {e.get('backend')}, not {what}: {e.get('source')}",
                "fix": str(e.get("how_to_undo") or ""),
            }
        )
    return out


def _truncated(report: dict) -> list[dict]:
    """Logs cut mid-record: what the job did after the cut is not in them."""
    cut = report.get("truncated") or []
    if not cut:
        return []
    where = ", ".join(f"{t['log']} (line {t['line']})" for t in cut[:3]) + (" ..." if len(cut) > 3 else "")
    return [
        {
            "kind": "truncated",
            "message": f"truncated trace: {where} ends mid-record (a job killed while writing it?);"
            " the counts are of what was written before the cut",
            "fix": "let the job finish (or copy the whole log) before comparing its counts",
        }
    ]


def headlines(report: dict, session=None) -> list[dict]:
    """The report's leading verdicts, most consequential first."""
    out = _truncated(report) + _backend_switched(report)
    failed = report.get("compile_failed")
    if failed and failed["nothing_compiled"]:  # called, and its compile raised: not "never called"
        out.append({"kind": "compile_failed", "message": failed["message"], "fix": failed["fix"]})
    elif h := _no_graph(report, session):
        out.append(h)
    out += _eager_frames(report)
    out += _limit_hits(report)
    return out
