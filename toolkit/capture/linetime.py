"""Dynamo's seconds by source line, measured in the runner child while the script compiles.

Dynamo traces a frame by interpreting its bytecode one instruction at a time
(`InstructionTranslatorBase.step`); an inlined call runs a nested translator inside the caller's
CALL step. Wrapping `step` gives, per traced instruction, its inclusive time (the step, nested
translators included) and its self time (less the nested steps), attributed to the translator's
code object and the instruction's source line. Wrapping the root translator's `run` closes one
window per compile attempt: its totals are written into torch's structured trace as the JSON artifact
`fxlens_compile_lines`, under the compile id torch is compiling, so `fxlens report` and the TUI read
them beside torch's own times. A bare TORCH_TRACE log of a job run without fxlens has none.

Inclusive time of a code object counts only its outermost activation: `Module._call_impl` is inlined
inside itself (a module calling a submodule), and counting each nested activation would count the
same seconds twice.

Private torch symbols come through fxlens.backend.torch_compat.
"""

from __future__ import annotations

import json
import time

ARTIFACT = "fxlens_compile_lines"
FORMAT = 1
# a window names at most this many functions (by inclusive time); the rest are summed as "other"
MAX_FUNCTIONS = 200
_BACKWARD_JUMPS = (
    "JUMP_BACKWARD",
    "JUMP_BACKWARD_NO_INTERRUPT",
    "POP_JUMP_BACKWARD_IF_TRUE",
    "POP_JUMP_BACKWARD_IF_FALSE",
    "POP_JUMP_BACKWARD_IF_NONE",
    "POP_JUMP_BACKWARD_IF_NOT_NONE",
)


class _Window:
    """What one root translator's run stepped: per code object, per instruction index, [self
    seconds, inclusive seconds (the line's outermost activation), steps, line, inclusive seconds of
    the function's outermost activation]; and the seconds
    steps spent in work that is not tracing (`buckets`: the output graph, the backend)."""

    def __init__(self):
        self.stats: dict = {}
        self.instructions: dict = {}  # code -> the translator's instruction list (first seen)
        self.active: dict = {}  # code, or (code, line) -> how many of its steps are open
        self.open: list = []  # per open step, [net seconds of the steps nested in it]
        self.root_steps_s = 0.0  # net of the buckets
        self.excluded_s = 0.0  # running total of the buckets' seconds
        self.buckets: dict[str, float] = {}


_windows: list[_Window] = []
_installed: list = []  # (owner, attribute, the owner's own value or None) to restore
# (torch_compat symbol, attribute, bucket): work a step may run that is not tracing a line
_BUCKETS = (
    ("OutputGraph", "compile_subgraph", "output_graph"),
    ("OutputGraph", "call_user_compiler", "backend"),
)


def install(emit=None) -> bool:
    """Wrap Dynamo's step and root run; `emit(payload: dict)` gets each window (default: the
    structured trace artifact). False (nothing wrapped) where this torch lacks the symbols."""
    if _installed:
        return True
    try:
        from fxlens.backend.torch_compat import resolve

        base = resolve("InstructionTranslatorBase")
        root = resolve("InstructionTranslator")
        wraps = [
            (base, "step", _timed_step(base.step)),
            (root, "run", _timed_run(root.run, emit or _emit_artifact)),
        ]
        for symbol, name, bucket in _BUCKETS:
            owner = resolve(symbol)
            wraps.append((owner, name, _timed_bucket(getattr(owner, name), bucket)))
    except (ImportError, AttributeError):
        return False
    for owner, name, wrapper in wraps:
        _installed.append((owner, name, vars(owner).get(name)))
        setattr(owner, name, wrapper)
    return True


def uninstall() -> None:
    """Put torch's own methods back."""
    while _installed:
        owner, name, own = _installed.pop()
        if own is None:
            delattr(owner, name)  # it was inherited: drop the override, inherit again
        else:
            setattr(owner, name, own)


def _timed_step(original):
    now = time.perf_counter
    windows = _windows

    def step(tx):
        if not windows:  # a translator outside any root run (nothing to attribute it to)
            return original(tx)
        w = windows[-1]
        code, ip = tx.f_code, tx.instruction_pointer
        per = w.stats.get(code)
        if per is None:
            per = w.stats[code] = {}
            w.instructions[code] = tx.instructions
        row = per.get(ip)
        if row is None:
            line = _line(tx, ip)
            # [self s, line's incl s, steps, line, function's incl s, the line's key (made once)]
            row = per[ip] = [0.0, 0.0, 0, line, 0.0, (code, line)]
        line_key = row[5]
        active, opened = w.active, w.open
        nested = [0.0]
        opened.append(nested)
        depth = active.get(code, 0)
        line_depth = active.get(line_key, 0)
        active[code] = depth + 1
        active[line_key] = line_depth + 1
        e0 = w.excluded_s
        t0 = now()
        try:
            return original(tx)
        finally:
            dt = now() - t0 - (w.excluded_s - e0)  # net of the output graph and backend
            opened.pop()
            active[code] = depth
            active[line_key] = line_depth
            if opened:
                opened[-1][0] += dt
            else:
                w.root_steps_s += dt
            row[0] += dt - nested[0]
            if not line_depth:  # the line's outermost activation (a recursive call counts once)
                row[1] += dt
            if not depth:  # the function's outermost activation
                row[4] += dt
            row[2] += 1

    step.__wrapped__ = original
    return step


def _line(tx, ip) -> int:
    """The source line of the translator's instruction `ip` (its own position, else the current line)."""
    try:
        return tx.instructions[ip].positions.lineno or tx.lineno
    except (AttributeError, IndexError, TypeError):
        return tx.lineno


def _timed_bucket(original, bucket: str):
    """`original` timed into `bucket` (exclusive of buckets nested in it), and kept out of the
    seconds of the step that ran it."""
    now = time.perf_counter

    def timed(*args, **kwargs):
        if not _windows:
            return original(*args, **kwargs)
        w = _windows[-1]
        e0 = w.excluded_s
        t0 = now()
        try:
            return original(*args, **kwargs)
        finally:
            dt = now() - t0
            w.buckets[bucket] = w.buckets.get(bucket, 0.0) + dt - (w.excluded_s - e0)
            w.excluded_s = e0 + dt

    timed.__wrapped__ = original
    return timed


def _timed_run(original, emit):
    now = time.perf_counter

    def run(tx):
        w = _Window()
        _windows.append(w)
        outcome = "ok"
        t0 = now()
        try:
            return original(tx)
        except BaseException as e:
            outcome = type(e).__name__  # RestartAnalysis: this attempt's seconds are spent again
            raise
        finally:
            run_s = now() - t0
            _windows.pop()
            try:
                emit(summarize(w, run_s, outcome))
            except Exception:  # noqa: BLE001, S110 - timing must never change what the script does
                pass

    run.__wrapped__ = original
    return run


def summarize(w: _Window, run_s: float, outcome: str) -> dict:
    """A window as the artifact's JSON: functions (inclusive first) with their lines and loops."""
    funcs = []
    for code, per in w.stats.items():
        insts = w.instructions.get(code) or []
        funcs.append(_function(code, per, insts))
    funcs.sort(key=lambda f: -f["incl_s"])
    kept, rest = funcs[:MAX_FUNCTIONS], funcs[MAX_FUNCTIONS:]
    return {
        "format": FORMAT,
        "outcome": outcome,
        "run_s": round(run_s, 6),
        "steps_s": round(w.root_steps_s, 6),
        "buckets": {k: round(v, 6) for k, v in w.buckets.items()},
        "functions": kept,
        "other_self_s": round(sum(f["self_s"] for f in rest), 6),
    }


def _function(code, per: dict, insts: list) -> dict:
    lines: dict[int, list] = {}  # line -> [self, incl, hits, steps]
    for ip, (self_s, incl_s, steps, line, *_) in per.items():
        row = lines.setdefault(line or 0, [0.0, 0.0, 0, 0])
        row[0] += self_s
        row[1] += incl_s
        row[3] += steps
        if ip < len(insts) and getattr(insts[ip], "starts_line", None) == line and not row[2]:
            row[2] = steps  # the line's first instruction: how many times the line was entered
    return {
        "file": code.co_filename,
        "function": code.co_name,
        "first_line": code.co_firstlineno,
        "self_s": round(sum(r[0] for r in per.values()), 6),
        "incl_s": round(sum(r[4] for r in per.values()), 6),
        "lines": [[ln, round(r[0], 6), round(r[1], 6), r[2], r[3]] for ln, r in sorted(lines.items())],
        "loops": _loops(per, insts),
    }


def _loops(per: dict, insts: list) -> list:
    """[[line, last line, iterations, inclusive seconds]] per loop stepped: a backward jump and its
    target bound the loop; iterations are the steps of its backward jumps."""
    index = {id(inst): i for i, inst in enumerate(insts)}
    loops: dict[int, list] = {}  # target index -> [jumps stepped, last index]
    for ip, row in per.items():
        inst = insts[ip] if ip < len(insts) else None
        target = getattr(inst, "target", None)
        if inst is None or inst.opname not in _BACKWARD_JUMPS or id(target) not in index:
            continue
        loop = loops.setdefault(index[id(target)], [0, ip])
        loop[0] += row[2]
        loop[1] = max(loop[1], ip)
    out = []
    for start, (iterations, end) in loops.items():
        span = [row for ip, row in per.items() if start <= ip <= end]
        line = per[start][3] if start in per else min(r[3] or 0 for r in span)
        last = max(r[3] or 0 for r in span)
        out.append([line, last, iterations, round(sum(r[4] for r in span), 6)])
    return sorted(out, key=lambda x: -x[3])


def _emit_artifact(payload: dict) -> None:
    from fxlens.backend.torch_compat import trace_structured

    trace_structured(
        "artifact",
        metadata_fn=lambda: {"name": ARTIFACT, "encoding": "json"},
        payload_fn=lambda: json.dumps(payload, separators=(",", ":")),
    )
