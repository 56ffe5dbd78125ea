"""Every record kind torch's structured trace writes (2.3 to 2.15), one `Kind` row each: its reader,
what it yields and where that lands, and how the reader, the model and the TUI treat it. A record
whose kind has no row is counted and listed in the report (`unknown_records`), never dropped.

`table()` is the table, with the kinds outside packages registered (`register_kind`, or the
`fxlens.record_kinds` entry-point group); docs/reference/record-kinds.md is written from it.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace

from fxlens.trace import kind_readers as r
from fxlens.trace.kindtable import HIDDEN, Kind, KindTable, group
from fxlens.trace.records import (
    BytecodeDump,
    Collectives,
    CompileMetrics,
    ExportIssue,
    Fallback,
    Graph,
    GraphBreak,
    Kernel,
    Recompile,
    RuntimeEstimate,
    SpecialGraph,
)
from fxlens.trace.shapes import check_dynamo_start, check_metrics, check_output_graph, check_str

# A compile without a compile id (AOTInductor, export's inductor): its records are one compile, "-"
NO_ID = "-"
ENTRY_POINT_GROUP = "fxlens.record_kinds"


def _shown(names, prefix: str = "artifact:", **kw) -> tuple[Kind, ...]:
    """Kinds kept by compile id and shown as they are (the TUI lists them)."""
    return tuple(Kind(prefix + n, **kw) for n in names)


_DYNAMO = group(
    "Dynamo: what was compiled, from where, what broke and why it recompiled",
    (
        Kind("str", check=check_str, why="interned file names, read by the log reader itself"),
        Kind(
            "dynamo_start",
            check=check_dynamo_start,
            slim=True,
            label=HIDDEN,
            why="the user stack entering a compile (the model's first pass: entry stacks)",
        ),
        Kind(
            "dynamo_output_graph",
            r.hold_graph,
            Graph,
            "graphs",
            check=check_output_graph,
            label="Dynamo FX graph",
            graph=True,
            why="built after the pass, once the metrics hold its node count",
        ),
        Kind(
            "artifact:dynamo_output_graph",
            why="a Dynamo graph logged as an artifact (tlparse's subgraph_name.log)",
        ),
        Kind("dynamo_cpp_guards_str", label="guards", why="the guard tree (Session.guards)"),
        Kind("dynamo_guards", label="guards (JSON, torch before 2.4)", why="guards as JSON, torch 2.3"),
        Kind(
            "artifact:dynamo_graph_break_reason",
            r.read_graph_break,
            GraphBreak,
            "graph_breaks",
            label="graph break",
        ),
        Kind(
            "artifact:recompile_reasons", r.read_recompile, Recompile, "recompiles", label="recompile reasons"
        ),
        Kind("artifact:dynamo_error", why="the failure text (also in compilation_metrics)"),
        Kind(
            "compilation_metrics",
            r.hold_metrics,
            CompileMetrics,
            "metrics",
            no_id=True,
            check=check_metrics,
            slim=True,
            label="compile metrics",
            why="read after the pass, with its backward's record",
        ),
        Kind(
            "bwd_compilation_metrics",
            r.hold_backward,
            check=check_metrics,
            slim=True,
            why="the backward's compile, folded into its forward's metrics",
        ),
        Kind("aot_autograd_backward_compilation_metrics", why="compile cost"),
        Kind("compilation_metrics_runtime", why="compile cost"),
        Kind("artifact:torch_version", label=HIDDEN),
    ),
)
_AOT_INDUCTOR = group(
    "AOTAutograd and inductor: the graphs and code each stage made",
    (
        *(
            Kind(f"aot_{k}_graph", no_id=True, graph=True, label=f"ATen {k} graph")
            for k in ("forward", "backward", "inference", "joint")
        ),
        Kind("inductor_pre_grad_graph", no_id=True),
        Kind("inductor_post_grad_graph", no_id=True),
        Kind(
            "artifact:inductor_post_grad_graph", no_id=True, why="the post-grad graph, as torch 2.13 logs it"
        ),
        Kind("inductor_input_graph"),
        Kind(
            "inductor_output_code", no_id=True, label="inductor output code", why="code, kernels, provenance"
        ),
        Kind(
            "graph_dump",
            r.read_graph_dump,
            SpecialGraph,
            "specials",
            no_id=True,
            why="AOTInductor wrapper/kernel code among other dumps",
        ),
        *_shown(
            (
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
            ),
            no_id=True,
        ),
        *_shown(
            (
                "aot_forward_graph_fw_subclass_metadata",
                "before_joint_graph",
                "after_joint_graph",
                "torch._functorch.config",
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
            )
        ),
        Kind(
            "artifact:*_ORIGINAL_BYTECODE",
            r.read_bytecode,
            BytecodeDump,
            "bytecode_dumps",
            label="bytecode (original)",
            why="the bytecode of a compiled code object, before Dynamo",
        ),
        Kind(
            "artifact:*_MODIFIED_BYTECODE",
            r.read_bytecode,
            BytecodeDump,
            "bytecode_dumps",
            label="bytecode (modified)",
            why="the bytecode Dynamo made of it",
        ),
    ),
)
_CACHES = group(
    "Caches and compile cost (read per compile by fxlens.trace.compile_cost)",
    _shown(
        (
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
        ),
        why="compile cost",
    ),
)
_lines = r.lines_of
_DISTRIBUTED = group(
    "Distributed and special graphs: collectives, runtime estimates, execution order, DDP's splits",
    (
        Kind("artifact:inductor_collective_schedule", r.read_collectives, Collectives, "collectives"),
        Kind("artifact:inductor_runtime_and_tensor_meta", r.read_runtime, RuntimeEstimate, "runtimes"),
        Kind(
            "artifact:graph_execution",
            r.read_graph_execution,
            str,
            "exec_order",
            why="compile ids in run order",
        ),
        Kind(
            "artifact:inductor_graph_execution", r.read_graph_run, str, "graph_runs", why="an older release's"
        ),
        Kind(
            "optimize_ddp_split_graph",
            r.special(
                "ddp_split",
                lambda x: (
                    f"DDP optimizer split Dynamo's graph at bucket boundaries ({_lines(x)} lines of the split module)"
                ),
                lambda x: "split graph",
            ),
            SpecialGraph,
            "specials",
        ),
        Kind(
            "optimize_ddp_split_child",
            r.special(
                "ddp_child",
                lambda x: (
                    f"one bucket's submodule of the DDP-split graph, compiled on its own ({_lines(x)} lines)"
                ),
                lambda x: str(r.meta_of(x, "optimize_ddp_split_child").get("name") or "submod"),
            ),
            SpecialGraph,
            "specials",
        ),
        Kind(
            "compiled_autograd_graph",
            r.special(
                "compiled_autograd",
                lambda x: f"the backward graph compiled autograd captured ({_lines(x)} lines)",
                lambda x: "compiled autograd graph",
            ),
            SpecialGraph,
            "specials",
        ),
        Kind("artifact:compiled_autograd_compile_reasons"),
        Kind(
            "dump_file",
            r.special(
                "dump_file",
                lambda x: f"code torch generated and ran (an FX GraphModule's forward, {_lines(x)} lines)",
                lambda x: str(r.meta_of(x, "dump_file").get("name") or "?"),
            ),
            SpecialGraph,
            "specials",
        ),
        Kind(
            "artifact:make_fx_fail_partial",
            r.special(
                "make_fx_fail_partial",
                lambda x: f"make_fx failed partway: the graph traced until the error ({_lines(x)} lines)",
                lambda x: "partial make_fx graph",
            ),
            SpecialGraph,
            "specials",
        ),
    ),
)
_EXPORT = group(
    "Export: draft export's issues, as tlparse --export shows them",
    (
        Kind("propagate_real_tensors_provenance", r.read_data_dependent, ExportIssue, "export_issues"),
        Kind(
            "guard_added",
            r.read_guard_evaluated,
            ExportIssue,
            "export_issues",
            read_only_with=b'"prefix": "eval"',
            why="read only when export evaluated it (Dynamo logs thousands of the others)",
        ),
        Kind("missing_fake_kernel", r.fake_kernel("missing_fake_kernel"), ExportIssue, "export_issues"),
        Kind("mismatched_fake_kernel", r.fake_kernel("mismatched_fake_kernel"), ExportIssue, "export_issues"),
        Kind("exported_program"),
        *_shown(
            (
                "expression_created",
                "create_unbacked_symbol",
                "create_symbol",
                "symbolic_shape_specialization",
                "guard_on_data_dependent_error",
            ),
            prefix="",
            why="symbolic-shape bookkeeping behind export issues",
        ),
    ),
)
_SKIPPED = group(
    "Skipped unread on their line prefix",
    _shown(
        (
            "chromium_event",
            "describe_tensor",
            "describe_storage",
            "describe_source",
            "guard_added_fast",
            "link",
            "propagate_real_tensors",
        ),
        prefix="",
        skip=True,
        why="timings (--perfetto reads them apart) and tensor descriptions",
    ),
)
def read_compile_lines(rec, ctx):
    """fxlens.trace.linetimes's reader, its module (four record types) loaded on the first such
    artifact: a trace `fxlens run` did not measure never pays for it."""
    from fxlens.trace import linetimes

    return linetimes.read_compile_lines(rec, ctx)


_FXLENS = group(
    "fxlens's own backend",
    (
        Kind("artifact:fxlens_kernel", r.read_kernel, Kernel, "kernels"),
        Kind("artifact:fxlens_fallbacks", r.read_fallbacks, Fallback, "fallbacks"),
        Kind(
            "artifact:fxlens_compile_lines",
            read_compile_lines,
            "LineWindow",  # fxlens.trace.linetimes's, imported when the kind is first read
            "compile_lines",
            label="Dynamo's seconds by line",
            why="Dynamo's seconds by source line of one compile attempt (written by `fxlens run`'s runner)",
        ),
        Kind("artifact:fxlens_stage", label=HIDDEN),
        *_shown(
            ("fxlens_aten_forward_graph", "fxlens_aten_inference_graph", "fxlens_aten_backward_graph"),
            graph=True,
        ),
        *_shown(("fxlens_ir", "fxlens_fusion", "fxlens_triton")),
        Kind("artifact:fxlens_*_graph", graph=True, why="a graph fxlens's backend logged"),
        Kind("artifact:fxlens_*", why="fxlens's backend's other artifacts"),
    ),
)

#: every record kind fxlens knows, in the reference page's order
KINDS: tuple[Kind, ...] = (*_DYNAMO, *_AOT_INDUCTOR, *_CACHES, *_DISTRIBUTED, *_EXPORT, *_SKIPPED, *_FXLENS)
_TABLE = KindTable(KINDS)
_outside_loaded = False


def table() -> KindTable:
    """The table: fxlens's rows, then those outside packages declare in the entry-point group."""
    global _outside_loaded
    if not _outside_loaded:
        _outside_loaded = True
        _load_entry_points()
    return _TABLE


def register_kind(row: Kind) -> Kind:
    """Teach fxlens a record kind without editing it: `row.read(rec, ctx)` returns a record (or a
    list of them, or None), kept per rank in `RankModel.extra[row.field]` and across ranks in
    `Session.extra(row.field)`. A kind that already has a row is refused (ValueError)."""
    if row.source == "fxlens":
        row = replace(row, source="outside")
    table().add(row)
    return row


def _maybe_declared() -> bool:
    """False only when no installed distribution can declare the group: every sys.path entry is a
    folder (or absent) and no `*.dist-info`/`*.egg-info/entry_points.txt` in them names it. Reading
    those few small files costs ~1 ms; importing importlib.metadata (email, zipfile, csv) ~30 ms of a
    report's start."""
    header = f"[{ENTRY_POINT_GROUP}]"
    for entry in sys.path:
        folder = entry or "."
        if not os.path.isdir(folder):
            if os.path.exists(folder):  # a zip or another kind importlib.metadata may read
                return True
            continue
        try:
            names = os.listdir(folder)
        except OSError:
            return True
        for name in names:
            if name.endswith((".dist-info", ".egg-info")):
                try:
                    with open(os.path.join(folder, name, "entry_points.txt"), encoding="utf-8") as f:
                        if header in f.read():
                            return True
                except OSError:
                    continue
    return False


def _load_entry_points() -> None:
    """Each entry point of the group is a Kind or an iterable of them; one that fails to load is said
    on stderr in one line and left out (one broken package must not stop a report)."""
    if not _maybe_declared():
        return
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            found = ep.load()
            for row in [found] if isinstance(found, Kind) else list(found):
                _TABLE.add(replace(row, source=ep.value.split(":")[0]))
        except Exception as e:  # noqa: BLE001 -- an outside package's bug
            print(f"fxlens: record kinds of {ep.name} ({ep.value}) not loaded: {e}", file=sys.stderr)
