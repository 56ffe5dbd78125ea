"""The readers of the record-kind table (fxlens.trace.kinds), one per kind, each a few lines.

A reader is `read(rec, ctx) -> record | list of records | None`: what it returns lands in its row's
model field. `ctx` (fxlens.trace.kindtable.ReadContext) holds the record's compile id, the log's
interned names and where each compile is in the user's code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from fxlens.trace.breaks import graph_break
from fxlens.trace.guards import parse_failed_guard
from fxlens.trace.records import (
    BytecodeDump,
    Collectives,
    ExportIssue,
    Fallback,
    Frame,
    Kernel,
    Recompile,
    RuntimeEstimate,
    SpecialGraph,
    frames_from,
)
from fxlens.trace.userframes import innermost_user_frame, source_line

if TYPE_CHECKING:
    from fxlens.trace.kindtable import ReadContext, Reader
    from fxlens.trace.reader import Record


def _payload_json(rec: Record):
    data = rec.payload_json()
    if data is None and rec.payload_span is not None:
        raise ValueError("payload is not JSON")
    return data


# -- Dynamo: what broke, what recompiled; graphs and metrics are held for after the pass --------


def hold_graph(rec: Record, ctx: ReadContext) -> None:
    """A Dynamo graph: held until the metrics hold its node count (the last attempt wins)."""
    if ctx.cid:
        ctx.held.setdefault("graphs", {})[ctx.cid] = rec


def hold_metrics(rec: Record, ctx: ReadContext) -> None:
    """A compile's metrics: held until the pass ends (its backward's record comes after it)."""
    ctx.held.setdefault("metrics", []).append(rec)


def hold_backward(rec: Record, ctx: ReadContext) -> None:
    """The backward graph's compile, folded into its forward's metrics after the pass."""
    b = rec.meta["bwd_compilation_metrics"] or {}
    ctx.held.setdefault("backward", {})[ctx.cid or str(b.get("compile_id") or "?")] = b


def read_graph_break(rec: Record, ctx: ReadContext):
    if ctx.cid:
        return graph_break(rec, ctx.cid, ctx.where(ctx.cid), ctx.entry_stacks.get(ctx.cid, []))
    return None


def read_recompile(rec: Record, ctx: ReadContext):
    if not ctx.cid:
        return None
    fn, file, line, co = ctx.where(ctx.cid)
    items = _reason_items(rec)
    return Recompile(
        ctx.cid,
        rec.rank,
        fn,
        file,
        line,
        tuple(_first_lines(items)),
        co,
        tuple(parse_failed_guard(i) for i in items),
    )


def _reason_items(rec: Record) -> list[str]:
    """The recompile record's failed guards, each whole (first line, torch's comment, user stack)."""
    data = rec.payload_json()
    items = data if isinstance(data, list) else [data if isinstance(data, str) else rec.payload()]
    return [str(i).strip("\n") for i in items if str(i).strip()]


def _first_lines(items: list[str]) -> list[str]:
    """The guard of each item: its first line, without the "# source  # file:line" comment."""
    out = []
    for item in items:
        first = item.strip().split("\n")[0]
        first = re.sub(r"\s{2,}#.*$", "", first).strip()
        if first:
            out.append(first)
    return out


# -- fxlens's own backend ----------------------------------------------------------------------


def read_kernel(rec: Record, ctx: ReadContext):
    if not ctx.cid:
        return None
    k = rec.payload_json() or {}
    return Kernel(
        ctx.cid,
        rec.rank,
        str(k.get("name", "?")),
        str(k.get("graph", "")),
        tuple(k.get("ops", ())),
        int(k.get("bytes_read") or 0),
        int(k.get("bytes_written") or 0),
        str(k.get("source_path", "")),
    )


def read_fallbacks(rec: Record, ctx: ReadContext):
    if not ctx.cid:
        return None
    ops = (rec.payload_json() or {}).get("ops") or {}
    return [Fallback(ctx.cid, rec.rank, op, int(n)) for op, n in ops.items()]


# -- the bytecode of a compiled code object, before and after Dynamo ------------------------------

# one instruction of `dis` output: [line] [>>] offset OPNAME (the source line only on its first)
_INSTRUCTION = re.compile(r"^\s*(?:\d+\s+)?(?:>>\s*)?\d+\s+[A-Z][A-Z0-9_]+\b", re.M)


def read_bytecode(rec: Record, ctx: ReadContext):
    """A `<co_name>_ORIGINAL_BYTECODE` / `_MODIFIED_BYTECODE` artifact (`dis.Bytecode(code).dis()`)."""
    name = rec.kind.removeprefix("artifact:")
    code, _, stage = name.rpartition("_")[0].rpartition("_")
    return BytecodeDump(
        ctx.cid or "-", rec.rank, code, stage.lower(), len(_INSTRUCTION.findall(rec.payload()))
    )


# -- distributed: collectives, runtime estimates, execution order --------------------------------


def read_collectives(rec: Record, ctx: ReadContext):
    ops = _payload_json(rec) or []
    return Collectives(ctx.cid or "-", rec.rank, tuple(str(o) for o in ops))


def read_runtime(rec: Record, ctx: ReadContext):
    data = _payload_json(rec) or {}
    ops = [o for o in data.get("ops") or [] if isinstance(o, dict)]
    return RuntimeEstimate(
        ctx.cid or "-",
        rec.rank,
        tuple(
            (str(o.get("name")), str(o.get("type", "")), float(o.get("estimated_runtime_ns") or 0))
            for o in ops
        ),
        json.dumps([o.get("outputs") for o in ops], sort_keys=True, separators=(",", ":")),
    )


def read_graph_execution(rec: Record, ctx: ReadContext):
    """torch's record of the order compiled graphs ran in (`record_and_log_graph_execution_order`)."""
    data = _payload_json(rec) or {}
    return [str(x.get("compile_id")) for x in data.get("graph_execution_order") or [] if isinstance(x, dict)]


def read_graph_run(rec: Record, ctx: ReadContext):
    """An older release's record of one graph run (`inductor_graph_execution`: `{"graph": "graph_0"}`)."""
    data = _payload_json(rec) or {}
    return [str(data.get("graph", "?"))]


# -- graphs of a special kind --------------------------------------------------------------------


def special(kind: str, detail: Callable[[Record], str], name: Callable[[Record], str]) -> Reader:
    """The reader of a graph kept as a graph of its own kind (a DDP split, compiled autograd's, ...)."""

    def read(rec: Record, ctx: ReadContext):
        return SpecialGraph(kind, ctx.cid or "-", rec.rank, name(rec), detail(rec))

    read.__name__ = f"read_{kind}"
    read.__doc__ = f"A `{kind}` record, kept as a graph of its own kind."
    return read


def meta_of(rec: Record, key: str) -> dict:
    body = rec.meta.get(rec.kind.split(":")[-1]) or rec.meta.get(key) or {}
    return body if isinstance(body, dict) else {}


def lines_of(rec: Record) -> int:
    text = rec.payload()
    return text.count("\n") + 1 if text else 0


_AOTI_CODE = ("inductor_aot_wrapper_code", "inductor_aot_kernel_code", "inductor_aot_header_code")


def read_graph_dump(rec: Record, ctx: ReadContext):
    """A graph or code dump; AOTInductor's wrapper and kernel code arrive this way, with no compile id."""
    name = str(meta_of(rec, "graph_dump").get("name") or "")
    if name not in _AOTI_CODE:
        return None
    detail = f"AOTInductor {name.split('_')[2]} code ({lines_of(rec)} lines)"
    return SpecialGraph("aot_inductor", ctx.cid or "-", rec.rank, name, detail)


# -- export (draft export's issues, as tlparse --export shows them) ------------------------------


def _user_frame(rec: Record, key: str, ctx: ReadContext) -> Frame:
    """The user's innermost frame of a record's `user_stack` (file names interned)."""
    body = rec.meta.get(key) or {}
    frames = frames_from(body.get("user_stack") or body.get("stack"), ctx.scan.strings)
    return innermost_user_frame(frames) or (frames[-1] if frames else Frame("", 0, "?", ""))


def _issue(
    rec: Record, ctx: ReadContext, key: str, kind: str, expr: str, result: str, fix: str, message: str
):
    f = _user_frame(rec, key, ctx)
    code = source_line(f.file, f.line, f.code)
    return ExportIssue(kind, rec.rank, expr, result, f.file, f.line, f.function, code, fix, message)


def read_data_dependent(rec: Record, ctx: ReadContext):
    """Draft export could not decide a data-dependent expression: it assumed the value it had on the
    example inputs and inserted a runtime assert (tlparse: "Data Dependent Error")."""
    body = rec.meta.get("propagate_real_tensors_provenance") or {}
    expr, result = str(body.get("expr", "?")), str(body.get("result", "?"))
    check = expr if result == "True" else f"not ({expr})"
    return _issue(
        rec,
        ctx,
        "propagate_real_tensors_provenance",
        "data-dependent",
        expr,
        result,
        f"torch._check({check}) before this line, if that holds for every input (else handle both cases)",
        f"could not tell whether `{expr}` holds; assumed {result} from the example inputs and asserted it",
    )


def read_guard_evaluated(rec: Record, ctx: ReadContext):
    """A guard export evaluated on a symbolic shape (`prefix: eval`): it can specialise the shape and
    fail the dynamic-shape constraints (tlparse: "Guard Evaluated"). Only kept for export logs."""
    body = rec.meta.get("guard_added") or {}
    if body.get("prefix") != "eval":
        return None
    expr = str(body.get("expr", "?"))
    return _issue(
        rec,
        ctx,
        "guard_added",
        "guard evaluated",
        expr,
        "",
        "if the dimension is meant to be dynamic, drop the check or express it with Dim(min=, max=)",
        f"export evaluated the guard `{expr}`: the shape may be specialised (a constraint violation)",
    )


def fake_kernel(kind: str) -> Reader:
    """The reader of an op with no fake kernel, or one that disagrees with the real kernel."""

    def read(rec: Record, ctx: ReadContext):
        body = rec.meta.get(kind) or {}
        op = str(body.get("op", "?"))
        why = str(body.get("reason", "")) if kind == "mismatched_fake_kernel" else ""
        fix = f"register a fake kernel: @torch.library.register_fake('{op}')"
        message = f"torch.ops.{op} " + (
            f"has a fake kernel that disagrees with the real one: {why}" if why else "has no fake kernel"
        )
        return ExportIssue(kind.replace("_", " "), rec.rank, op, "", "", 0, "", "", fix, message)

    read.__name__ = f"read_{kind}"
    return read
