"""The Session model's records: small frozen dataclasses, pure Python (no torch import)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Frame:
    """One frame of a user stack."""

    file: str
    line: int
    function: str
    code: str = ""


def frames_from(stack, strings: dict) -> list[Frame]:
    """The frames of a stack as torch logs it (`[{filename, line, name, loc}]`), file names given as
    indices of the log's interned strings resolved through `strings`; entries that are not frames
    are skipped."""
    return [
        Frame(
            strings.get(f.get("filename"), str(f.get("filename"))),
            int(f.get("line") or 0),
            str(f.get("name")),
            f.get("loc") or "",
        )
        for f in stack or ()
        if isinstance(f, dict)
    ]


@dataclass(frozen=True)
class Graph:
    """A graph Dynamo captured (one per compile that produced a graph)."""

    compile_id: str
    rank: int | None
    function: str  # the user's function (resume functions mapped back)
    file: str
    line: int
    num_nodes: int
    num_ops: int
    ops: tuple[str, ...]  # distinct call targets, in first-use order
    co_name: str = ""  # the code object torch compiled (may be a resume function)
    library: str = ""  # the library frame torch compiled, when not the user's code ("pkg/f.py:12 in fn")


@dataclass(frozen=True)
class GraphBreak:
    """One graph break as torch logged it, located at the user's innermost frame."""

    compile_id: str
    rank: int | None
    reason: str  # torch's one-line reason (the gb type)
    file: str
    line: int
    function: str
    explanation: str = ""
    hints: tuple[str, ...] = ()
    url: str = ""
    source: str = ""  # the user's source line
    call_path: tuple[Frame, ...] = ()  # from the torch.compile'd entry to the break
    library: Frame | None = None  # the frame that broke, when inside a library (file as a package path)
    gb_id: str = ""  # torch's graph-break registry id ("GB0156"), when its record gives one
    skipped_frame: bool = False  # torch gave up on the frame: it runs eagerly (not a resumable break)


@dataclass(frozen=True)
class Recompile:
    """A recompile of a frame, with the guards of earlier compiles that failed."""

    compile_id: str
    rank: int | None
    function: str
    file: str
    line: int
    failed_guards: tuple[str, ...]
    co_name: str = ""
    guards: tuple = ()  # the failed guards parsed (fxlens.trace.guards.FailedGuard), same order


@dataclass(frozen=True)
class RecompileLimitHit:
    """A frame that hit torch's recompile limit: from then on it runs eagerly."""

    compile_id: str
    rank: int | None
    function: str
    file: str
    line: int
    limit: int | None
    limit_type: str = "recompile_limit"


@dataclass(frozen=True)
class CompileMetrics:
    """Dynamo's compilation metrics for one compile."""

    compile_id: str
    rank: int | None
    function: str
    co_name: str
    file: str
    line: int
    total_s: float | None
    backend_s: float | None
    guard_count: int | None
    fail_type: str | None = None
    fail_reason: str | None = None
    graph_node_count: int | None = None
    # torch's breakdown, seconds (None where the release or backend did not record it)
    inductor_s: float | None = None
    code_gen_s: float | None = None
    backward_s: float | None = None  # the backward graph's compile (bwd_compilation_metrics)
    dynamo_before_restart_s: float | None = None
    # (cache, hits, misses): inductor_fx_local, aotautograd_local, ... as torch counted them
    cache: tuple[tuple[str, int, int], ...] = ()
    restart_reasons: tuple[str, ...] = ()
    fail_user_file: str = ""
    fail_user_line: int = 0
    # the compiled frame's own code (torch's co_filename, co_firstlineno): `file`/`line` above are the
    # user's place for it, which for a library frame is the user's call line
    code_file: str = ""
    code_line: int = 0
    # (stage, seconds): torch's cumulative per-stage times (dynamo, aot_autograd, inductor, code_gen,
    # triton) and the backward graph's compile, in pipeline order; only the stages torch recorded
    stages: tuple[tuple[str, float], ...] = ()
    # the field the total came from (fxlens.trace.compile_cost.frame_times), "chromium_event" when
    # only torch's Perfetto events timed it, "" when nothing did
    time_source: str = ""
    # each cache lookup torch logged for this compile (fxlens.trace.compile_cost.CacheEvent), in order
    caches: tuple = ()
    # (name, seconds) of inductor's passes and other parts torch timed (compile_cost.PASSES)
    passes: tuple[tuple[str, float], ...] = ()
    # Triton's compile wait (triton_compile_time_us) and (kernel, microseconds) of the kernels torch
    # timed one by one (triton_kernel_compile_times_us, the 25 dearest); none for C++ kernels
    triton_compile_us: int | None = None
    triton_kernels_us: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Kernel:
    """A kernel generated by fxlens's backend."""

    compile_id: str
    rank: int | None
    name: str
    graph: str  # forward / backward / inference
    ops: tuple[str, ...]
    bytes_read: int
    bytes_written: int
    source_path: str = ""


@dataclass(frozen=True)
class Fallback:
    """An op fxlens's backend ran as an ATen call (not lowered to Triton)."""

    compile_id: str
    rank: int | None
    op: str
    count: int


@dataclass(frozen=True)
class RecompileCause:
    """A root cause behind one or more recompiles of a function (and its resume functions)."""

    function: str
    file: str
    line: int
    kind: str  # size, dtype, requires_grad, training, global, value, stride, other
    subject: str  # what changed: "input `x`, dim 0", "global `USE_BIAS`"
    values: tuple[str, ...]  # values it took, in order
    count: int  # recompiles explained
    message: str  # one line for humans
    fix: str  # what a PyTorch expert would suggest
    compile_ids: tuple[str, ...] = field(default=())
    ranks: tuple[int | None, ...] = ()  # the ranks it happened on (None: a job without ranks)
    guard: str = ""  # torch's own text of the guard behind the cause
    hint: str = ""  # torch's HINT for that guard, when it gave one
    # the fixes as data (fxlens.report.fixes actions: `{"kind", "params"}`), for `fxlens fix` to try
    actions: tuple = ()


@dataclass(frozen=True)
class Collectives:
    """The collectives inductor scheduled in one compiled graph, in issue order
    (`inductor_collective_schedule`), and those its output code calls."""

    compile_id: str
    rank: int | None
    ops: tuple[str, ...]  # torch's op names: "torch.ops._c10d_functional.all_reduce_.default"


@dataclass(frozen=True)
class RuntimeEstimate:
    """Inductor's runtime estimate of one compiled graph (`inductor_runtime_and_tensor_meta`)."""

    compile_id: str
    rank: int | None
    ops: tuple[tuple[str, str, float], ...]  # (name, type: compute/collective/..., estimated ns)
    tensor_meta: str  # the ops' output shapes, strides and dtypes, canonical JSON (compared across ranks)

    @property
    def total_ns(self) -> float:
        return sum(ns for _, _, ns in self.ops)


@dataclass(frozen=True)
class ExportIssue:
    """What torch.export (draft export) had to assume or could not do, as tlparse --export shows it."""

    kind: str  # "data-dependent", "guard evaluated", "missing fake kernel", "mismatched fake kernel"
    rank: int | None
    expression: str  # the symbolic expression (or the op, for a fake-kernel issue)
    result: str  # what torch assumed it evaluates to ("False"), when it did
    file: str
    line: int
    function: str
    code: str  # the user's line
    fix: str  # what to change
    message: str  # one line, with torch's own expression


@dataclass(frozen=True)
class SpecialGraph:
    """A graph that is not a plain Dynamo compile, said as what it is: a DDP-optimizer split and its
    submodules, a compiled-autograd graph, generated FX code (`dump_file`), a make_fx trace that
    failed partway, an AOTInductor compile (no compile id)."""

    kind: str  # ddp_split, ddp_child, compiled_autograd, dump_file, make_fx_fail_partial, aot_inductor
    compile_id: str
    rank: int | None
    name: str
    detail: str  # one line: what it holds


@dataclass(frozen=True)
class BytecodeDump:
    """The bytecode torch logged of a code object it compiled (`<co_name>_ORIGINAL_BYTECODE`, and
    `_MODIFIED_BYTECODE`, what Dynamo made of it), as `dis` printed it."""

    compile_id: str
    rank: int | None
    code: str  # the code object's name (a resume function: torch_dynamo_resume_in_f_at_16)
    stage: str  # "original" or "modified"
    instructions: int  # bytecode instructions listed
