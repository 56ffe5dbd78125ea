"""The re-run's side of `fxlens fix`: apply the fixes asked for, and record what compiled calls return.

This module runs inside the user's process: `fxlens.capture.runner` calls `runner_hook()`
(FXLENS_RUNNER_HOOK) before the script starts:
- the fixes of fxlens.fix.appliers.START (config switches, a keyword every call of a torch.nn class
  passes) are applied here, before the script runs;
- `hook` fixes go on fxlens's one torch.compile hook (fxlens.capture.compile_hook), one applier per
  kind (fxlens.fix.appliers.APPLIERS): they change what the script's own torch.compile call
  compiles, or wrap what it returns;
- every object the script's torch.compile calls return is wrapped by the recorder, which keeps the
  tensors of the first calls' outputs (CPU copies) and counts every call; saved at exit with
  `torch.save` of plain tensors (read back with `weights_only=True`);
- what only a run can tell (the DataLoaders with a short last batch) is watched by
  fxlens.fix.usage.

With FXLENS_DOCTOR_PROBE set (`fxlens fix --speed`), doctor's timing probe is installed too, after
the fixes, so it times the object the script really gets.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import sys

from fxlens import config
from fxlens.capture.compile_hook import observe
from fxlens.fix.appliers import APPLIERS, START, Call, code_of, is_ddp, module_of, set_config
from fxlens.fix.usage import Usage
from fxlens.trace.session import append_event
from fxlens.trace.userframes import live_user_frame, short_path

# outputs kept per compiled object: the first calls (a training loop's outputs drift apart with
# every step of a changed numerics, so the first ones say the most), and at most this many bytes
MAX_CALLS = 8
MAX_BYTES = 64 << 20
# the random seed of every run (the script's own seeding, if any, comes after and wins)
SEED = 0


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


class _Recorder:
    def __init__(self, path: str):
        self.path = path
        self.outputs: dict[str, list] = {}
        self.calls: dict[str, int] = {}
        self.info: dict[str, dict] = {}
        self.sites: dict[tuple, int] = {}
        self.bytes = 0

    def key(self, frame) -> str:
        file, line = (frame.f_code.co_filename, frame.f_lineno) if frame else ("?", 0)
        n = self.sites.get((file, line), 0)
        self.sites[(file, line)] = n + 1
        return f"{file}:{line}:{n}"

    def keep(self, key: str, out) -> None:
        import torch

        self.calls[key] = self.calls.get(key, 0) + 1
        kept = self.outputs.setdefault(key, [])
        if len(kept) >= MAX_CALLS or self.bytes > MAX_BYTES:
            return
        # an inference tensor (made under torch.inference_mode) copies into a normal one
        with torch.inference_mode(False):
            tensors = [t.detach().to("cpu", copy=True) for t in _leaves(out) if isinstance(t, torch.Tensor)]
        self.bytes += sum(t.numel() * t.element_size() for t in tensors)
        kept.append(tensors)

    def save(self) -> None:
        import torch

        try:
            torch.save({"outputs": self.outputs, "calls": self.calls}, self.path)
        except Exception as e:  # noqa: BLE001 - never change the script's exit for a record
            print(f"fxlens fix: could not save the compiled outputs: {e}", file=sys.stderr)


def _leaves(out, depth: int = 0):
    """The tensors of a result: tensors, tuples, lists, dicts (HF ModelOutput is a dict), in order."""
    if depth > 4:
        return
    if isinstance(out, dict):
        for v in out.values():
            yield from _leaves(v, depth + 1)
    elif isinstance(out, (tuple, list)):
        for v in out:
            yield from _leaves(v, depth + 1)
    else:
        yield out


def _site(frame) -> str:
    return f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame else ""


def _fix_wrap(actions: list[dict], applied: dict, notes: dict, compiled_codes: list, real_compile):
    """The compile hook's wrap that applies the hook fixes to the script's own torch.compile calls."""

    def wrap(model, compiled, options: dict, frame):
        frame = live_user_frame(frame)
        if frame is None:  # a compile fxlens or torch made, not the script's
            return compiled
        code, inner, sig = code_of(model)
        if code is not None:
            what = f"`{code.co_name}` of {short_path(code.co_filename)}"
            if what not in compiled_codes:
                compiled_codes.append(what)
        call = Call(model, compiled, options, _site(frame), real_compile, code, inner, sig)
        for i, act in enumerate(actions):
            apply = APPLIERS.get(act["kind"])
            if apply is None:
                continue
            got = apply(call, act.get("params") or {})
            if got is not None:  # one state per call it applied to (a mark: filled at the first call)
                applied.setdefault(i, []).append(got)
            said = notes.setdefault(i, [])
            said += [n for n in call.notes if n not in said]
            call.notes.clear()
        return call.compiled

    return wrap


def _keeping(fn, recorder: _Recorder, key):
    """FN, with what each call returns kept by RECORDER under KEY."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        out = fn(*args, **kwargs)
        recorder.keep(key, out)
        return out

    return call


def _record_wrap(recorder: _Recorder, usage: Usage):
    """The compile hook's last wrap: count and keep the outputs of every call of what the script got."""
    import torch

    def wrap(model, compiled, options: dict, frame):
        frame = live_user_frame(frame)
        if frame is None or not callable(compiled):
            return compiled
        key = recorder.key(frame)
        module = module_of(model)
        recorder.info[key] = {
            "module": module is not None,
            "in_place": module is not None and module is not model,  # `module.compile()`
            "ddp": is_ddp(model),
        }
        if isinstance(compiled, torch.nn.Module) and getattr(compiled, "_compiled_call_impl", None):
            # compiled in place (a fix's `model.compile()`): its compiled `_call_impl` calls
            # `forward`, so a wrapped forward would be traced into the graph (its guards on the
            # recorder recompiled T5's generate()); keep what the compiled call returns instead
            compiled._compiled_call_impl = _keeping(compiled._compiled_call_impl, recorder, key)
            return compiled
        if isinstance(compiled, torch.nn.Module):
            # instance attribute: the module's __call__ path calls it
            compiled.forward = _keeping(compiled.forward, recorder, key)
            return compiled
        return _keeping(compiled, recorder, key)

    return wrap


def _at_start(actions: list[dict], applied: dict, notes: dict) -> None:
    """The fixes applied before the script runs (fxlens.fix.appliers.START)."""
    for i, act in enumerate(actions):
        apply = START.get(act["kind"])
        if apply is None:
            continue
        if apply(act.get("params") or {}):
            applied[i] = [True]
        else:
            notes.setdefault(i, []).append(f"the running torch has nothing {act['kind']} names")
    _keep_configs([a["params"] for i, a in enumerate(actions) if a["kind"] == "config" and i in applied])


def _keep_configs(configs: list[dict]) -> None:
    """Set the config switches again as each compile starts: a script that sets one itself (at its
    top, `torch._inductor.config.freezing = True`) would otherwise undo the fix before anything
    compiles, and the fix would measure as no effect."""
    if not configs:
        return
    from fxlens.backend.torch_compat import callback_handler

    def again(*_args) -> None:
        for params in configs:
            set_config(params)

    callback_handler.register_start_callback(again)


def _seed() -> None:
    """Every run of `fxlens fix` starts from the same random state: a script that never seeds
    (random weights, random inputs) then computes the same values in each, and outputs compare."""
    import random

    import torch

    random.seed(SEED)
    torch.manual_seed(SEED)
    if "numpy" in sys.modules or _importable("numpy"):
        import numpy

        numpy.random.seed(SEED)


def runner_hook(script: str, session: str):
    """FXLENS_RUNNER_HOOK of a `fxlens fix` re-run: apply the fixes in FXLENS_FIX, start the recorder."""
    import torch

    actions = json.loads(os.environ.get(config.ENV_FIX_ACTIONS) or "[]")
    applied: dict = {}
    notes: dict = {}
    compiled_codes: list = []
    _seed()
    _at_start(actions, applied, notes)
    if os.environ.get(config.ENV_FIX_STANCE) == "eager":
        torch.compiler.set_stance("force_eager")  # the reference run: every compiled object runs eagerly
    real_compile = getattr(torch.compile, "__wrapped__", torch.compile)
    observe("fix", wrap=_fix_wrap(actions, applied, notes, compiled_codes, real_compile))
    after = None
    if config.load().doctor_probe:
        from fxlens.probe.hook import runner_hook as doctor_hook

        after = doctor_hook(script, session)
    stdin = _watch_terminal_input()
    recorder = _Recorder(_outputs_path(session))
    usage = Usage()
    usage.watch_loaders()
    observe("fix_outputs", wrap=_record_wrap(recorder, usage))

    def at_exit() -> None:
        if _rank() == 0:  # every rank runs the same code: rank 0's outputs and record stand for all
            recorder.save()
        if session and _rank() == 0:
            done = {str(i): any(bool(s) for s in states) for i, states in applied.items()}
            append_event(
                session,
                "fix_child",
                {
                    "applied": done,
                    "notes": {str(i): n for i, n in notes.items() if n},
                    "compiled": compiled_codes,
                    "calls": recorder.calls,
                    "objects": recorder.info,
                    "stdin_read": bool(stdin and stdin.read),
                    "peak_rss": _peak_rss(),
                    **usage.record(),
                },
            )

    atexit.register(at_exit)
    return after


class _TerminalInput:
    """sys.stdin when it is a terminal, noting whether the script read it (a re-run cannot replay
    typed input, and fxlens fix says so before its re-runs)."""

    def __init__(self, real):
        self._real, self.read = real, False

    def __getattr__(self, name):
        if name in ("read", "readline", "readlines", "buffer", "__iter__", "__next__"):
            self.read = True
        return getattr(self._real, name)

    def __iter__(self):
        self.read = True
        return iter(self._real)


def _watch_terminal_input():
    try:
        if sys.stdin is None or not sys.stdin.isatty():
            return None
    except (AttributeError, ValueError, OSError):
        return None
    import builtins

    watched = sys.stdin = _TerminalInput(sys.stdin)
    real_input = builtins.input

    def input(*args):  # noqa: A001 - input() reads the terminal below sys.stdin's methods
        watched.read = True
        return real_input(*args)

    builtins.input = input
    return watched


def _peak_rss() -> int | None:
    """This process's peak resident memory so far, bytes (Linux counts ru_maxrss in KiB)."""
    try:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
    except (ImportError, OSError, ValueError):
        return None


def _rank() -> int:
    try:
        return int(os.environ.get("RANK") or 0)
    except ValueError:
        return 0


def _outputs_path(session: str) -> str:
    return os.environ.get(config.ENV_FIX_OUTPUTS) or os.path.join(session, "outputs.pt")
