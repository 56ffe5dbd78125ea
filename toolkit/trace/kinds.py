"""Every record kind torch's structured trace writes (2.3 to 2.15), one row each: who reads it and
which field of the rank's model it fills. A record whose kind is in no row is counted and listed in
the report (`unknown_records`), never dropped in silence.

`KINDS` is the table. A row's `read` is either a function here (the readers of this module: one per
kind, each a few lines) or the dotted name of the reader elsewhere (fxlens.trace.model reads the
kinds it always read; compile cost kinds are issue 30's); `field` is where its data lands.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from fxlens.trace.linetimes import read_compile_lines
from fxlens.trace.reader import LogScan, Record
from fxlens.trace.records import Collectives, ExportIssue, RuntimeEstimate, SpecialGraph
from fxlens.trace.userframes import innermost_user_frame, source_line

Reader = Callable[[Record, "str | None", object, LogScan], None]


@dataclass(frozen=True)
class Kind:
    """One row: a record kind (a record key, or `artifact:<name>`), its reader, the field it fills."""

    name: str
    read: Reader | str
    field: str
    why: str = ""


def _payload_json(rec: Record):
    data = rec.payload_json()
    if data is None and rec.payload_span is not None:
        raise ValueError("payload is not JSON")
    return data


def read_collectives(rec: Record, cid, model, scan) -> None:
    ops = _payload_json(rec) or []
    model.collectives.append(Collectives(cid or "-", rec.rank, tuple(str(o) for o in ops)))


def read_runtime(rec: Record, cid, model, scan) -> None:
    data = _payload_json(rec) or {}
    ops = [o for o in data.get("ops") or [] if isinstance(o, dict)]
    model.runtimes.append(
        RuntimeEstimate(
            cid or "-",
            rec.rank,
            tuple(
                (str(o.get("name")), str(o.get("type", "")), float(o.get("estimated_runtime_ns") or 0))
                for o in ops
            ),
            json.dumps([o.get("outputs") for o in ops], sort_keys=True, separators=(",", ":")),
        )
    )


def read_graph_execution(rec: Record, cid, model, scan) -> None:
    """torch's record of the order compiled graphs ran in (`record_and_log_graph_execution_order`)."""
    data = _payload_json(rec) or {}
    order = [str(x.get("compile_id")) for x in data.get("graph_execution_order") or [] if isinstance(x, dict)]
    model.exec_order.extend(order)


def read_graph_run(rec: Record, cid, model, scan) -> None:
    """An older release's record of one graph run (`inductor_graph_execution`: `{"graph": "graph_0"}`)."""
    data = _payload_json(rec) or {}
    model.graph_runs.append(str(data.get("graph", "?")))


def _special(kind: str, detail: Callable[[Record], str], name: Callable[[Record], str]) -> Reader:
    def read(rec: Record, cid, model, scan) -> None:
        model.specials.append(SpecialGraph(kind, cid or "-", rec.rank, name(rec), detail(rec)))

    read.__name__ = f"read_{kind}"
    read.__doc__ = f"A `{kind}` record, kept as a graph of its own kind."
    return read


def _meta(rec: Record, key: str) -> dict:
    body = rec.meta.get(rec.kind.split(":")[-1]) or rec.meta.get(key) or {}
    return body if isinstance(body, dict) else {}


def _lines(rec: Record) -> int:
    text = rec.payload()
    return text.count("\n") + 1 if text else 0


read_ddp_split = _special(
    "ddp_split",
    lambda r: (
        f"DDP optimizer split Dynamo's graph at bucket boundaries ({_lines(r)} lines of the split module)"
    ),
    lambda r: "split graph",
)
read_ddp_child = _special(
    "ddp_child",
    lambda r: f"one bucket's submodule of the DDP-split graph, compiled on its own ({_lines(r)} lines)",
    lambda r: str(_meta(r, "optimize_ddp_split_child").get("name") or "submod"),
)
read_compiled_autograd = _special(
    "compiled_autograd",
    lambda r: f"the backward graph compiled autograd captured ({_lines(r)} lines)",
    lambda r: "compiled autograd graph",
)
read_dump_file = _special(
    "dump_file",
    lambda r: f"code torch generated and ran (an FX GraphModule's forward, {_lines(r)} lines)",
    lambda r: str(_meta(r, "dump_file").get("name") or "?"),
)
read_make_fx_fail = _special(
    "make_fx_fail_partial",
    lambda r: f"make_fx failed partway: the graph traced until the error ({_lines(r)} lines)",
    lambda r: "partial make_fx graph",
)


def _user_frame(rec: Record, key: str, scan: LogScan):
    """The user's innermost frame of a record's `user_stack` (file names interned)."""
    from fxlens.trace.records import Frame, frames_from

    body = rec.meta.get(key) or {}
    frames = frames_from(body.get("user_stack") or body.get("stack"), scan.strings)
    return innermost_user_frame(frames) or (frames[-1] if frames else Frame("", 0, "?", ""))


def _issue(
    rec: Record, scan: LogScan, key: str, kind: str, expr: str, result: str, fix: str, message: str
) -> ExportIssue:
    f = _user_frame(rec, key, scan)
    return ExportIssue(
        kind,
        rec.rank,
        expr,
        result,
        f.file,
        f.line,
        f.function,
        source_line(f.file, f.line, f.code),
        fix,
        message,
    )


def read_data_dependent(rec: Record, cid, model, scan) -> None:
    """Draft export could not decide a data-dependent expression: it assumed the value it had on the
    example inputs and inserted a runtime assert (tlparse: "Data Dependent Error")."""
    body = rec.meta.get("propagate_real_tensors_provenance") or {}
    expr, result = str(body.get("expr", "?")), str(body.get("result", "?"))
    check = expr if result == "True" else f"not ({expr})"
    model.export_issues.append(
        _issue(
            rec,
            scan,
            "propagate_real_tensors_provenance",
            "data-dependent",
            expr,
            result,
            f"torch._check({check}) before this line, if that holds for every input (else handle both cases)",
            f"could not tell whether `{expr}` holds; assumed {result} from the example inputs and asserted it",
        )
    )


def read_guard_evaluated(rec: Record, cid, model, scan) -> None:
    """A guard export evaluated on a symbolic shape (`prefix: eval`): it can specialise the shape and
    fail the dynamic-shape constraints (tlparse: "Guard Evaluated"). Only kept for export logs."""
    body = rec.meta.get("guard_added") or {}
    if body.get("prefix") != "eval":
        return
    expr = str(body.get("expr", "?"))
    model.export_issues.append(
        _issue(
            rec,
            scan,
            "guard_added",
            "guard evaluated",
            expr,
            "",
            "if the dimension is meant to be dynamic, drop the check or express it with Dim(min=, max=)",
            f"export evaluated the guard `{expr}`: the shape may be specialised (a constraint violation)",
        )
    )


def _fake_kernel(kind: str) -> Reader:
    def read(rec: Record, cid, model, scan) -> None:
        body = rec.meta.get(kind) or {}
        op = str(body.get("op", "?"))
        why = str(body.get("reason", "")) if kind == "mismatched_fake_kernel" else ""
        fix = f"register a fake kernel: @torch.library.register_fake('{op}')"
        message = f"torch.ops.{op} " + (
            f"has a fake kernel that disagrees with the real one: {why}" if why else "has no fake kernel"
        )
        model.export_issues.append(
            ExportIssue(kind.replace("_", " "), rec.rank, op, "", "", 0, "", "", fix, message)
        )

    read.__name__ = f"read_{kind}"
    return read


_AOTI_CODE = ("inductor_aot_wrapper_code", "inductor_aot_kernel_code", "inductor_aot_header_code")


def read_graph_dump(rec: Record, cid, model, scan) -> None:
    """A graph or code dump; AOTInductor's wrapper and kernel code arrive this way, with no compile id."""
    name = str(_meta(rec, "graph_dump").get("name") or "")
    if name in _AOTI_CODE:
        model.specials.append(
            SpecialGraph(
                "aot_inductor",
                cid or "-",
                rec.rank,
                name,
                f"AOTInductor {name.split('_')[2]} code ({_lines(rec)} lines)",
            )
        )


# A compile without a compile id (AOTInductor, export's inductor): its records are one compile, "-"
NO_ID = "-"
NO_ID_COMPILE = frozenset(
    (
        "graph_dump",
        "compilation_metrics",
        "aot_inference_graph",
        "aot_forward_graph",
        "aot_backward_graph",
        "aot_joint_graph",
        "inductor_pre_grad_graph",
        "inductor_post_grad_graph",
        "inductor_output_code",
        *(
            f"artifact:{n}"
            for n in (
                "before_pre_grad_graph",
                "after_pre_grad_graph",
                "before_post_grad_graph",
                "after_post_grad_graph",
                "before_recompile_pre_grad",
                "after_recompile_pre_grad",
                "before_recompile_post_grad",
                "after_recompile_post_grad",
                "inductor_post_to_pre_grad_nodes",
                "inductor_triton_kernel_to_post_grad_nodes",
                "inductor_provenance_tracking_node_mappings",
                "inductor_provenance_tracking_kernel_stack_traces",
                "triton_kernel_info",
                "fx_graph_runnable",
                "aot_forward_graph_fw_metadata",
            )
        ),
    )
)


_MODEL = "fxlens.trace.model"
_COST = "compile cost (issue 30)"
_AS_IS = "shown as is, by compile id (TUI artifacts)"

#: every record kind torch writes, its reader, and the model field it fills
KINDS: tuple[Kind, ...] = (
    # -- Dynamo: what was compiled, from where, what broke and why it recompiled
    Kind("str", "fxlens.trace.reader._read_record", "LogScan.strings", "interned file names"),
    Kind("dynamo_start", f"{_MODEL}._note_start", "entry_stacks", "the user stack entering a compile"),
    Kind("dynamo_output_graph", f"{_MODEL}._add_graphs", "graphs"),
    Kind("dynamo_cpp_guards_str", "fxlens.trace.session.Session.guards", "by_compile", "the guard tree"),
    Kind("dynamo_guards", "fxlens.trace.session.json_guard_lines", "by_compile", "guards as JSON, torch 2.3"),
    Kind("artifact:dynamo_graph_break_reason", "fxlens.trace.breaks.graph_break", "graph_breaks"),
    Kind("artifact:recompile_reasons", f"{_MODEL}._read_records", "recompiles"),
    Kind("artifact:dynamo_error", _AS_IS, "by_compile", "the failure text (also in compilation_metrics)"),
    Kind("compilation_metrics", f"{_MODEL}._metrics", "metrics"),
    Kind("bwd_compilation_metrics", f"{_MODEL}._metrics", "metrics", "the backward's compile, folded in"),
    Kind("aot_autograd_backward_compilation_metrics", _COST, "metrics"),
    Kind("compilation_metrics_runtime", _COST, "metrics"),
    Kind("artifact:torch_version", _AS_IS, "by_compile"),
    # -- AOTAutograd and inductor: the graphs and code each stage made
    *(
        Kind(k, _AS_IS, "by_compile")
        for k in ("aot_forward_graph", "aot_backward_graph", "aot_inference_graph", "aot_joint_graph")
    ),
    *(
        Kind(k, _AS_IS, "by_compile")
        for k in ("inductor_pre_grad_graph", "inductor_post_grad_graph", "inductor_input_graph")
    ),
    Kind(
        "inductor_output_code",
        "fxlens.report.outputcode.output_code",
        "by_compile",
        "code, kernels, provenance",
    ),
    Kind("graph_dump", read_graph_dump, "specials", "AOTInductor wrapper/kernel code among other dumps"),
    # -- caches and compile cost (issue 30 reads these)
    *(
        Kind(f"artifact:{n}", _COST, "compile cost")
        for n in (
            "fx_graph_cache_hit",
            "fx_graph_cache_miss",
            "fx_graph_cache_bypass",
            "fx_graph_cache_hash",
            "fx_graph_bundled_cache_hit",
            "aotautograd_cache_hit",
            "aotautograd_cache_miss",
            "aotautograd_cache_bypass",
            "aotautograd_cache_hash",
            "aotautograd_cache_pickle_failure",
            "dynamo_cache_bypass",
            "dynamo_cache_entries",
            "dynamo_cache_exception",
            "precompile_cache_bypass",
        )
    ),
    # -- distributed: collectives, runtime estimates, execution order, DDP's graph splits
    Kind("artifact:inductor_collective_schedule", read_collectives, "collectives"),
    Kind("artifact:inductor_runtime_and_tensor_meta", read_runtime, "runtimes"),
    Kind("artifact:graph_execution", read_graph_execution, "exec_order"),
    Kind("artifact:inductor_graph_execution", read_graph_run, "graph_runs"),
    Kind("optimize_ddp_split_graph", read_ddp_split, "specials"),
    Kind("optimize_ddp_split_child", read_ddp_child, "specials"),
    Kind("compiled_autograd_graph", read_compiled_autograd, "specials"),
    Kind("artifact:compiled_autograd_compile_reasons", _AS_IS, "by_compile"),
    Kind("dump_file", read_dump_file, "specials"),
    Kind("artifact:make_fx_fail_partial", read_make_fx_fail, "specials"),
    # -- export (draft export's issues, as tlparse --export shows them)
    Kind("propagate_real_tensors_provenance", read_data_dependent, "export_issues"),
    Kind("guard_added", read_guard_evaluated, "export_issues", "kept only with prefix eval"),
    Kind("missing_fake_kernel", _fake_kernel("missing_fake_kernel"), "export_issues"),
    Kind("mismatched_fake_kernel", _fake_kernel("mismatched_fake_kernel"), "export_issues"),
    Kind("exported_program", _AS_IS, "by_compile"),
    *(
        Kind(k, _AS_IS, "-", "symbolic-shape bookkeeping behind export issues")
        for k in (
            "expression_created",
            "create_unbacked_symbol",
            "create_symbol",
            "symbolic_shape_specialization",
            "guard_on_data_dependent_error",
        )
    ),
    # -- skipped unread on their line prefix (fxlens.trace.reader._SKIP_PREFIXES)
    *(
        Kind(k, "skipped when read", "-", "timings (--perfetto) and tensor descriptions")
        for k in (
            "chromium_event",
            "describe_tensor",
            "describe_storage",
            "describe_source",
            "guard_added_fast",
            "link",
            "propagate_real_tensors",
        )
    ),
    # -- fxlens's own backend
    Kind("artifact:fxlens_kernel", f"{_MODEL}._kernel", "kernels"),
    Kind("artifact:fxlens_fallbacks", f"{_MODEL}._read_records", "fallbacks"),
    Kind("artifact:fxlens_compile_lines", read_compile_lines, "compile_lines", "Dynamo's seconds by line"),
)

# artifacts torch logs that are shown as they are (by compile id): known, not unknown
_SHOWN = (
    "aot_forward_graph_fw_metadata",
    "aot_forward_graph_fw_subclass_metadata",
    "fx_graph_runnable",
    "before_pre_grad_graph",
    "after_pre_grad_graph",
    "before_post_grad_graph",
    "after_post_grad_graph",
    "before_recompile_pre_grad",
    "after_recompile_pre_grad",
    "before_recompile_post_grad",
    "after_recompile_post_grad",
    "before_joint_graph",
    "after_joint_graph",
    "torch._functorch.config",
    "inductor_post_to_pre_grad_nodes",
    "inductor_triton_kernel_to_post_grad_nodes",
    "inductor_provenance_tracking_node_mappings",
    "inductor_provenance_tracking_kernel_stack_traces",
    "triton_kernel_info",
    "runtime_wrapper_orchestration",
    "aot_inference_graph_after_hop_passes",
    "aot_joint_graph_sync_decision_cross_ranks",
    "aot_saved_tensors_hooks_graphs",
    "dynamo_side_effects",
    "compiled_autograd_graph_pre_reordering",
    "fx_compute_nodes_runtime_estimation",
    "inductor_spmd_graph_mismatch",
    "inductor_aot_wrapper_code",
    "inductor_aot_kernel_code",
    "inductor_aot_header_code",
    "inductor_autotune_at_compile_time_code",
    "min_cut_information",
    "min_cut_failed_fx_graph",
    "eager_compile_backwards_failure",
    "fx_interpreter_error",
    "invoke_subgraph_backward_duplicate",
    "backward_prologue",
    "backward_epilogue",
    "compiled_function_forward",
    "compiled_function_backward",
    "compiled_fn_wrapper",
    "aot_autograd_runtime_wrappers",
    "fxlens_ir",
    "fxlens_stage",
    "fxlens_aten_forward_graph",
    "fxlens_aten_inference_graph",
    "fxlens_aten_backward_graph",
    "fxlens_fusion",
    "fxlens_triton",
)
KNOWN: frozenset[str] = frozenset(k.name for k in KINDS) | frozenset(f"artifact:{n}" for n in _SHOWN)
#: kind -> the reader this module runs for it (the model's own kinds are read where they always were)
READERS: dict[str, Reader] = {k.name: k.read for k in KINDS if callable(k.read)}
# fxlens's own artifacts, and the bytecode torch logs per compiled code object
# (`artifact:torch_dynamo_resume_in_f_at_16_ORIGINAL_BYTECODE`): shown as they are
_KNOWN_PATTERN = re.compile(r"^artifact:(?:fxlens_\w+|\w+_(?:ORIGINAL|MODIFIED)_BYTECODE)$")


def is_known(kind: str) -> bool:
    """Whether a record kind has a row (or is one of the families `_KNOWN_PATTERN` names)."""
    return kind in KNOWN or bool(_KNOWN_PATTERN.match(kind))
