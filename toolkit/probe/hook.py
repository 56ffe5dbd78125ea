"""The child side of `fxlens doctor`: time every call of every object `torch.compile` returns.

`fxlens.capture.runner` calls `runner_hook()` (named in FXLENS_RUNNER_HOOK by `fxlens doctor`); the
probe's `wrap` goes on the one torch.compile hook (fxlens.capture.compile_hook) beside capture's.

- mode "eager": `torch.compiler.set_stance("force_eager")`, so every compiled object runs its
  original Python code; this is the baseline the compiled run is compared with.
- mode "compiled": the script runs as written (or with the backend `fxlens doctor --backend` chose).

Either way each object torch.compile returns is wrapped so that every call is timed (perf_counter,
with a CUDA synchronisation on both sides when CUDA is in use), and Dynamo's compile callbacks tell
which calls compiled and for how long. At exit one `doctor_probe` event with every record, the
process peak memory and the script's wall time is appended to the session. The wrapper only
measures: arguments and results pass through untouched, so numerics never change.

In the compiled run, once the script has ended normally, `measure_all` (the hook's return value,
called by the runner) calls each object again with the arguments of the latest call of its most
frequent input shapes (not simply the last call: a loop's short final batch), eager and compiled
interleaved (fxlens.probe.interleave): the steady state and its interval come from there. Those
extra calls happen after the script's own output, so they never change what the script computed.
"""

from __future__ import annotations

import atexit
import functools
import os
import sys
import time
from dataclasses import asdict, dataclass, field

from fxlens.backend.stages import capture_only
from fxlens.capture.compile_hook import observe
from fxlens.probe.callstate import capture_or_none
from fxlens.probe.memory import RssMarks, measure_call, process_peak_memory
from fxlens.trace.session import append_event
from fxlens.trace.userframes import live_user_frame

# seconds of re-timing at most for a backend that only captures: no verdict on speed is claimed for
# it, the timing only shows its overhead
CAPTURE_ONLY_BUDGET_S = 5.0

# keep at most this many per-call times per object: a loop of a million calls stays cheap, and
# each rank's event stays one small append to the shared events file
MAX_TIMES = 5000
# distinct input-shape signatures remembered per object
MAX_SIGNATURES = 32
# the script's stdout and stderr, in its run's session directory
OUTPUT_FILE = "output.log"
# distributed wrappers torch's docs say to compile inside of, by class name
_WRAPPER_CLASSES = ("DistributedDataParallel", "FullyShardedDataParallel")


@dataclass
class ProbeRecord:
    """What the probe learns about one object torch.compile returned."""

    index: int  # order of torch.compile calls in this process
    name: str  # `scale`, `Model.forward`
    kind: str  # function, module, method
    def_file: str
    def_line: int
    at_file: str  # where the user called torch.compile
    at_line: int
    at_ordinal: int  # n-th object compiled at that line (a compile inside a loop)
    options: dict
    wrapped_in: str | None = None  # DDP / FSDP class name when the compiled object is one
    calls: int = 0
    times_ms: list = field(default_factory=list)  # per call, up to MAX_TIMES
    compiles: list = field(default_factory=list)  # compiles that ran during each call
    compile_ms: list = field(default_factory=list)  # Dynamo compile time within each call
    outside_compile_ms: float = 0.0  # compiles after the call returned (lazy backward)
    signatures: dict = field(default_factory=dict)  # input shapes -> calls
    shape_changes: int = 0  # calls whose input shapes differ from the previous call's
    grad_calls: int = 0  # calls whose output requires grad: their backward runs outside the call
    bench: dict | None = None  # the interleaved measurement after the script (fxlens.probe.interleave)


@dataclass
class _State:
    mode: str = ""
    session: str = ""
    t0: float = 0.0
    records: list = field(default_factory=list)
    sites: dict = field(default_factory=dict)  # (file, line) -> objects compiled there
    depth: int = 0  # nesting of timed calls
    last: ProbeRecord | None = None  # the object called most recently (gets lazy compiles)
    compiles: int = 0
    compile_s: float = 0.0
    compile_t0: float = 0.0
    budget_s: float = 0.0  # seconds of interleaved timing per object after the script (0: none)
    min_span_s: float | None = None  # the least seconds of pairs (None: interleave.MIN_SPAN_S)
    # per record index: (eager callable, compiled callable untimed) and the typical call's
    # (shapes, args, kwargs, CallState); kept out of ProbeRecord, which asdict() copies
    callables: dict = field(default_factory=dict)
    last_call: dict = field(default_factory=dict)
    measuring: bool = False  # the after-script measurement runs: its compiles are nobody's cost
    trace_boundary: dict | None = None  # where the script's trace ends (fxlens.probe.replaytrace.mark)
    replay_compiles: int = 0  # compiles during the after-script measurement: doctor's, not the script's
    replay_s: float = 0.0  # seconds of that measurement: doctor's time, never the script's wall time
    rss: RssMarks = field(default_factory=RssMarks)  # peak RSS before the script, around compiles, at its end


_STATE = _State()


def _on_compile_start(*_args) -> None:
    _STATE.compile_t0 = time.perf_counter()
    _STATE.rss.compile_started(paused=_STATE.measuring)  # doctor's replay is not the script's memory


def _on_compile_end(*_args) -> None:
    took = time.perf_counter() - _STATE.compile_t0
    _STATE.compiles += 1
    _STATE.compile_s += took
    _STATE.rss.compile_ended(took)
    if _STATE.measuring:
        _STATE.replay_compiles += 1
    # a compile outside any timed call is AOTAutograd's lazy backward (or a compile the script
    # triggered some other way): charge it to the object called last, whose graph it belongs to
    if _STATE.depth == 0 and _STATE.last is not None and not _STATE.measuring:
        _STATE.last.outside_compile_ms += took * 1000


def _describe(obj) -> tuple[str, str, str, int, str | None]:
    """(name, kind, definition file, definition line, distributed wrapper) of a compile target."""
    import torch

    kind = "function"
    target = obj
    if getattr(obj, "__self__", None) is not None and isinstance(obj.__self__, torch.nn.Module):
        target, kind = obj.__self__, "method"  # `model.compile()` compiles model._call_impl
    wrapped_in = None
    if isinstance(target, torch.nn.Module):
        kind = "module" if kind == "function" else kind
        names = {c.__name__ for c in type(target).__mro__}
        wrapped_in = next((n for n in _WRAPPER_CLASSES if n in names), None)
        if wrapped_in is None and "FSDPModule" in names:
            wrapped_in = "fully_shard"  # FSDP2 swaps the class for an FSDPModule subclass
        inner = getattr(target, "module", target) if wrapped_in else target
        fwd = getattr(type(inner), "forward", None)
        code = getattr(fwd, "__code__", None)
        name = f"{type(inner).__name__}.forward"
        if wrapped_in:
            name = f"{wrapped_in}({type(inner).__name__}).forward"
    else:
        fn = getattr(obj, "__func__", obj)
        code = getattr(fn, "__code__", None)
        name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    file = code.co_filename if code else ""
    line = code.co_firstlineno if code else 0
    return name, kind, file, line, wrapped_in


def _signature(args: tuple, kwargs: dict) -> str:
    """The input shapes of one call (tensors, and tensors one level inside lists and tuples)."""
    import torch

    parts = []
    for v in (*args, *kwargs.values()):
        if isinstance(v, torch.Tensor):
            parts.append(tuple(v.shape))
        elif isinstance(v, (list, tuple)):
            parts.extend(tuple(t.shape) for t in v if isinstance(t, torch.Tensor))
    return repr(parts)


def _requires_grad(out) -> bool:
    """Whether a call's result (a tensor, or the first tensor of a tuple/list) requires grad."""
    first = out[0] if isinstance(out, (tuple, list)) and out else out
    return bool(getattr(first, "requires_grad", False))


def _timed(fn, rec: ProbeRecord):
    """Wrap `fn` so each call is timed and recorded in `rec`; arguments and result pass through."""
    import torch

    cuda = torch.cuda
    state = _STATE
    last_sig = [None]

    def sync() -> None:
        # only when the script already uses CUDA: initialising it here would cost seconds (and
        # is_initialized() is cheap where is_available() is not: it runs inside the timed region)
        if cuda.is_initialized():
            cuda.synchronize()

    @functools.wraps(fn)
    def call(*args, **kwargs):
        sig = _signature(args, kwargs)
        # the state the call runs in, for a replay in the same one (before the clock starts)
        before = _call_state(rec) if state.budget_s > 0 else None
        sync()
        n0, s0 = state.compiles, state.compile_s
        state.depth += 1
        t0 = time.perf_counter()
        try:
            out = fn(*args, **kwargs)
            sync()
        finally:
            state.depth -= 1
        took = time.perf_counter() - t0
        state.last = rec
        rec.calls += 1
        if len(rec.times_ms) < MAX_TIMES:
            rec.times_ms.append(round(took * 1000, 5))
            rec.compiles.append(state.compiles - n0)
            rec.compile_ms.append(round((state.compile_s - s0) * 1000, 3))
        if sig in rec.signatures or len(rec.signatures) < MAX_SIGNATURES:
            rec.signatures[sig] = rec.signatures.get(sig, 0) + 1
        if before is not None:
            _keep_typical_call(rec, sig, (args, kwargs, before))
        if _requires_grad(out):
            rec.grad_calls += 1
        if last_sig[0] is not None and sig != last_sig[0]:
            rec.shape_changes += 1
        last_sig[0] = sig
        return out

    return call


def _call_state(rec: ProbeRecord):
    """The state a call of `rec`'s object starts in (fxlens.probe.callstate), None if unreadable."""
    eager = _STATE.callables.get(rec.index)
    return capture_or_none(eager[0] if eager else None)


def _keep_typical_call(rec: ProbeRecord, sig: str, call: tuple) -> None:
    """Keep the arguments the after-script measurement will call again with: the latest call of the
    script's most frequent input shapes. The last call alone is often atypical: a DataLoader's
    short final batch, an eval step at the end of training."""
    kept = _STATE.last_call.get(rec.index)
    if kept is None or kept[0] == sig or rec.signatures.get(sig, 0) >= rec.signatures.get(kept[0], 0):
        _STATE.last_call[rec.index] = (sig, *call)


def wrap(model, compiled, kwargs: dict, frame):
    """The compile hook's wrap: record what torch.compile made of `model` and return it timed."""
    frame = live_user_frame(frame)
    name, kind, def_file, def_line, wrapped_in = _describe(model)
    at_file = frame.f_code.co_filename if frame else ""
    at_line = frame.f_lineno if frame else 0
    ordinal = _STATE.sites.get((at_file, at_line), 0)
    _STATE.sites[(at_file, at_line)] = ordinal + 1
    backend = kwargs.get("backend", "inductor")
    rec = ProbeRecord(
        index=len(_STATE.records),
        name=name,
        kind=kind,
        def_file=def_file,
        def_line=def_line,
        at_file=at_file,
        at_line=at_line,
        at_ordinal=ordinal,
        options={
            "backend": backend if isinstance(backend, str) else getattr(backend, "__name__", repr(backend)),
            "dynamic": kwargs.get("dynamic"),
            "mode": kwargs.get("mode"),
            "fullgraph": bool(kwargs.get("fullgraph", False)),
        },
        wrapped_in=wrapped_in,
    )
    _STATE.records.append(rec)
    if callable(model):
        # eager is the object the user handed torch.compile; compiled is what it returned, untimed
        plain = (
            compiled.forward if hasattr(compiled, "_orig_mod") and hasattr(compiled, "forward") else compiled
        )
        _STATE.callables[rec.index] = (model, plain)
    if hasattr(compiled, "_orig_mod") and hasattr(compiled, "forward"):
        # an OptimizedModule: keep the module (DDP, .parameters(), state_dict all still work) and
        # time its forward, which is the Dynamo-wrapped call of the original module
        compiled.forward = _timed(compiled.forward, rec)
        return compiled
    if callable(compiled):
        return _timed(compiled, rec)
    return compiled


def _flush() -> None:
    """At exit: one `doctor_probe` event with everything measured in this process."""
    if not _STATE.session:
        return
    rank = os.environ.get("RANK")
    append_event(
        _STATE.session,
        "doctor_probe",
        {
            "mode": _STATE.mode,
            "rank": int(rank) if rank and rank.isdigit() else None,
            "pid": os.getpid(),
            # the script's own time: doctor's re-timing after it ended is not the script's
            "script_s": time.perf_counter() - _STATE.t0 - _STATE.replay_s,
            "replay_s": round(_STATE.replay_s, 3),
            "memory": process_peak_memory(_STATE.rss),
            "compiles": _STATE.compiles,
            "compile_s": _STATE.compile_s,
            "records": [asdict(r) for r in _STATE.records],
            # the replay's trace records are split off by the parent (fxlens.probe.replaytrace)
            "trace_boundary": _STATE.trace_boundary,
            "replay_compiles": _STATE.replay_compiles,
        },
    )


def _redirect_output(session: str) -> None:
    """Send this process's stdout and stderr to OUTPUT_FILE in the session.

    doctor runs the script several times and its output would drown the report; doing it here,
    in the child, leaves the parent's own file descriptors alone (a TUI calling doctor keeps its
    terminal). Every rank appends to the same file.
    """
    if not session:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(os.path.join(session, OUTPUT_FILE), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _distributed() -> bool:
    return int(os.environ.get("WORLD_SIZE") or 1) > 1


def _retime_skip(rec: ProbeRecord) -> str | None:
    """Why `rec` cannot be called again in this process after the script (None: it can).

    A distributed wrapper's calls run collectives: every rank would have to make the same extra calls
    in the same order, and the ranks' adaptive budgets never agree. A compiled module inside the
    wrapper runs none of its own, so rank 0 re-times it (its row is the job's) once the script has
    destroyed its process group: a collective the module does run then raises at once (and only
    that object goes unmeasured) instead of waiting for ranks that have finished.
    """
    if rec.wrapped_in:
        return (
            f"distributed: {rec.wrapped_in}'s calls run collectives, which would have to match on every rank"
        )
    if not _distributed():
        return None
    if (os.environ.get("RANK") or "0") != "0":
        return "distributed: rank 0 re-times, its row stands for the job"
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return (
            "distributed: the script left its process group up, and a re-timed call running a collective "
            "would wait for ranks that have finished (destroy_process_group() at the end allows re-timing)"
        )
    return None


def measure_all() -> None:
    """After the script: the interleaved eager-vs-compiled measurement of every object it called.

    Under a distributed launch only rank 0 re-times, and only what `_retime_skip` allows.
    """

    from fxlens.probe.interleave import ReplayRefused, measure

    _STATE.rss.script_ended()  # the script's peak: doctor's replay below is not the script's
    if _STATE.mode != "compiled" or _STATE.budget_s <= 0:
        return
    from fxlens.probe.callstate import describe, restored, unrestorable
    from fxlens.probe.replaytrace import mark
    from fxlens.probe.segments import profile_replay

    _STATE.trace_boundary = mark()
    _STATE.measuring = True
    t0 = time.perf_counter()
    try:
        for rec in _STATE.records:
            if rec.index not in _STATE.last_call or rec.index not in _STATE.callables:
                continue
            skip = _retime_skip(rec)
            eager_fn, compiled_fn = _STATE.callables[rec.index]
            sig, args, kwargs, call_state = _STATE.last_call[rec.index]
            if not skip and call_state is None:
                skip = (
                    "not replayed: the state of its call (train/eval, grad mode, autocast) could not be read"
                )
            elif not skip and (why := unrestorable(call_state)):
                skip = f"not replayed: {why}"
            if skip:
                rec.bench = {"skipped": skip}
                continue
            # a backend that only captures has no speed to find: its overhead needs no minute
            budget = _STATE.budget_s
            if capture_only(rec.options.get("backend")):
                budget = min(budget, CAPTURE_ONLY_BUDGET_S)
            try:
                with restored(call_state):
                    timed = (eager_fn, compiled_fn, args, kwargs, budget)
                    rec.bench = measure(*timed, lambda: _STATE.compiles, _STATE.min_span_s)
                # which of the script's calls the steady state stands for, and the state it ran in
                rec.bench["timed_on"] = {"shapes": sig, "calls": rec.signatures.get(sig, 0)}
                rec.bench["replayed_in"] = describe(call_state)
                rec.bench["segments"] = profile_replay(compiled_fn, args, kwargs, call_state)
                rec.bench["memory"] = measure_call(timed[:2] + (args, kwargs), call_state, _STATE)
            except ReplayRefused as e:  # the call changes its arguments: a replay times another call
                rec.bench = {"skipped": f"not replayed: {e}"}
            except Exception as e:  # noqa: BLE001 - one object's failure must not lose the others
                rec.bench = {"skipped": f"error: {type(e).__name__}: {str(e)[:200]}"}
    finally:
        _STATE.replay_s += time.perf_counter() - t0
        _STATE.measuring = False
        _STATE.last_call.clear()  # let the arguments go before interpreter teardown


def runner_hook(script: str, session: str):
    """The runner child's hook (FXLENS_RUNNER_HOOK): install the probe in the mode doctor asked for.

    Returns what the runner calls after the script ends normally: the interleaved measurement
    (there, not at exit: torch's own exit handlers, registered later, would run first and may shut
    down the compile workers a recompile needs).
    """
    from fxlens import config

    cfg = config.load()
    install(cfg.doctor_probe, script, session)
    _STATE.budget_s = cfg.doctor_budget_s
    _STATE.min_span_s = cfg.doctor_min_span_s
    return measure_all


def install(mode: str, script: str, session: str) -> None:
    """Set up the probe in the child process that runs SCRIPT (called by fxlens.capture.runner)."""
    _redirect_output(session)
    import torch

    _STATE.mode = mode
    _STATE.session = session
    _STATE.t0 = time.perf_counter()
    if mode == "eager":
        # the baseline: every torch.compile'd object runs its original code, nothing compiles
        torch.compiler.set_stance("force_eager")
    try:
        from fxlens.backend.torch_compat import callback_handler

        callback_handler.register_start_callback(_on_compile_start)
        callback_handler.register_end_callback(_on_compile_end)
    except (ImportError, AttributeError):  # older torch: compile time then comes from the trace only
        pass
    observe("doctor", wrap=wrap)
    atexit.register(_flush)
