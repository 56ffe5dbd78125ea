"""The child side of `fxlens run` (and of bisect, minify, doctor): run SCRIPT as `__main__`.

`python -m fxlens.capture.runner SCRIPT [ARGS...]`, with the parent's settings in the environment:
TORCH_TRACE (set before torch is imported, so torch's structured trace captures everything),
FXLENS_BACKEND_OVERRIDE (replaces the backend of every torch.compile call), FXLENS_SESSION
(where toolkit events go). Exit status: the script's own.
"""

from __future__ import annotations

import importlib
import os
import runpy
import signal
import sys
import traceback

from fxlens import config
from fxlens.capture.compile_hook import observe
from fxlens.capture.imports import when_imported
from fxlens.errors import FxlensError
from fxlens.trace.compileclock import ClockHandler
from fxlens.trace.session import append_event

# exit status of the runner when fxlens itself refuses (bad backend): the parent reports it
REFUSED = 3
# run_script's status for a script ended by an uncaught KeyboardInterrupt (SIGINT sent to it alone)
INTERRUPTED = 128 + signal.SIGINT
_interrupted = False  # set when the script ended by KeyboardInterrupt (not by exit(130))
_SCRIPT_GLOBALS: list[dict] = []


def patch_compile(override, script: str, session: str) -> None:
    """Record the backend each torch.compile / torch._dynamo.optimize call asks for, and where, and
    apply the override (through the one hook, fxlens.capture.compile_hook). Calls asking for a
    backend in FXLENS_OVERRIDE_KEEP keep it (a comparing script's reference)."""
    observe("capture", route=_router(override, script, session), wrap=_note_generators(session))


def _note_generators(session: str):
    """`wrap` that records a compiled generator function (Dynamo refuses to trace one and logs
    nothing a report could read: "Attempt to trace generator"), so the report says that, not
    "never called". Returns what torch returned, untouched."""
    import inspect

    def wrap(model, compiled, options, frame):
        fn = getattr(model, "forward", model) if not inspect.isfunction(model) else model
        if session and (inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn)):
            where = {"file": frame.f_code.co_filename, "line": frame.f_lineno}
            _append_quietly(session, "compile_generator", {"name": getattr(fn, "__qualname__", "?"), **where})
        return compiled

    return wrap


def _router(override, script: str, session: str):
    """`route(backend, api, frame) -> backend to use`: records the call (for the parent) and applies
    the override, unless the backend asked for is one FXLENS_OVERRIDE_KEEP keeps."""
    from fxlens.capture.backends import describe

    keep = {k for k in os.environ.get(config.ENV_OVERRIDE_KEEP, "").split(",") if k}
    sites = SiteBackends(override)

    def route(backend, api: str, frame):
        asked = describe(backend, script, frame.f_globals)
        if session:
            _append_quietly(
                session,
                "compile_call",
                {
                    "backend": asked,
                    "file": frame.f_code.co_filename,
                    "line": frame.f_lineno,
                    "override": bool(override) and asked not in keep,
                    "api": api,
                },
            )
        if override is None or asked in keep:
            return backend
        return sites.replacing(backend, asked)

    return route


def _note_backend_switches(session: str) -> None:
    """What makes torch.compile run another backend than asked, outside the script (a leftover
    CompilerBisector state, TORCH_BISECT_BACKEND): an event each, said by the report."""
    if session:
        from fxlens.capture.backend_switch import backend_switches

        for switch in backend_switches():
            _append_quietly(session, "backend_switch", switch)


class SiteBackends:
    """One override backend per backend object of the script: the same object wherever the script
    passed the same backend, a distinct one wherever it passed a distinct one.

    Dynamo keys its cached graphs by backend (a cache entry is reused only when the backend
    compares equal, torch/_dynamo/guards.py "BACKEND_MATCH"): two compiled closures of one code
    object share a graph only when the script gave them one backend. A new callable per
    torch.compile call would hide a bug where they wrongly share one (a missing guard), and one
    callable for backends the script kept apart would create sharing the script never had.

    Keys: a backend name is its string (torch's wrappers for one name compare equal); any other
    backend is the object itself, held here so its id is never reused.
    """

    def __init__(self, override):
        self.override = override
        self._chosen: dict = {}
        self._held: list = []

    def replacing(self, backend, asked: str):
        """The override for a call that asked for `backend` (described as `asked`)."""
        if isinstance(backend, str):
            key = ("name", backend)
        else:
            key = ("object", id(backend))
            if key not in self._chosen:
                self._held.append(backend)
        if key not in self._chosen:
            self._chosen[key] = self._new(backend, asked, first=not self._chosen)
        return self._chosen[key]

    def _new(self, backend, asked: str, first: bool):
        override = self.override
        # a backend that wants to know what each call asked for (bisect's, minify's) gets it: the
        # description, and the object itself (a backend the script built, say with aot_autograd,
        # may not resolve again from its description)
        per_call = getattr(override, "for_asked", None)
        if per_call is not None:
            return per_call(asked, backend)
        if first:
            return override  # the common case, one backend in the script: exactly what was named
        if isinstance(override, str):
            if override == "inductor":
                # torch's inductor wrappers compare equal by config: two backends the script kept
                # apart would share graphs. A callable of its own, built with the call's mode and
                # options as torch's wrapper is (torch passes them to a callable backend)
                return _DistinctInductor()
            from fxlens.backend.torch_compat import lookup_backend

            override = lookup_backend(override)
        return _Distinct(override)


class _DistinctInductor:
    """inductor under a new identity: `torch.compile(backend=this, mode=..., options=...)` hands
    mode and options to each call (torch's `_TorchCompileWrapper`), which build torch's own inductor
    wrapper, as `backend="inductor"` does; `dynamic` is not handed on, so a mode's choice that
    depends on it (reduce-overhead's cudagraphs) is made as for `dynamic=None`."""

    __name__ = "inductor"

    def __init__(self):
        self._wrappers: dict = {}

    def __call__(self, gm, example_inputs, mode=None, options=None):
        from fxlens.backend.torch_compat import TorchCompileInductorWrapper

        key = (mode, repr(sorted((options or {}).items())))
        if key not in self._wrappers:
            self._wrappers[key] = TorchCompileInductorWrapper(mode, dict(options or {}), None)
        return self._wrappers[key](gm, example_inputs)


class _Distinct:
    """`backend` under a new identity (Dynamo compares backends by equality: this one equals only
    itself), named as `backend` is in torch's logs."""

    def __init__(self, backend):
        self._backend = backend
        self.__name__ = getattr(backend, "__name__", type(backend).__name__)

    def __call__(self, *args, **kwargs):
        return self._backend(*args, **kwargs)


def _append_quietly(session: str, kind: str, data: dict) -> None:
    """An event for the parent; on a full disk it is lost, but the user's script never fails for it."""
    try:
        append_event(session, kind, data)
    except OSError:
        pass


def _quiet_trace_errors(internal) -> None:
    """torch's trace handler reports each failed write (a full disk) with logging's own
    "--- Logging error ---" traceback: thousands of them, burying fxlens's one error line. Say
    the first in one line, then nothing; the script's other loggers keep logging's behaviour."""
    handler = getattr(internal, "LazyTraceHandler", None)
    if handler is None:
        return
    said = []

    def handle_error(self, record) -> None:
        if not said:
            said.append(True)
            err = sys.exc_info()[1]
            why = getattr(err, "strerror", None) or err or "write failed"
            print(
                f"fxlens: torch cannot write its trace ({why}); further trace write errors are not shown",
                file=sys.stderr,
            )

    handler.handleError = handle_error


def _watch_trace(session: str) -> None:
    """Under TORCH_TRACE: trace write errors said once; with a session, Dynamo's seconds by source
    line (written into the trace beside torch's own times) and compile seconds on the compiling
    thread's CPU clock (for gates a load spike must not trip)."""
    when_imported("torch._logging._internal", _quiet_trace_errors)
    if not session:
        return
    if config.compile_lines_on():
        from fxlens.capture import linetime

        when_imported("torch._dynamo", lambda _module: linetime.install())
    when_imported("torch._logging._internal", lambda internal: internal.trace_log.addHandler(_CLOCK))


def run_script(script: str, args: list[str], module: str | None = None) -> int:
    """Run SCRIPT (or MODULE, whose file SCRIPT is) as `__main__`; the script's exit status."""
    cfg = config.load()
    script = os.path.abspath(script)
    override = after = None
    if cfg.backend_override:
        from fxlens.capture.backends import resolve

        try:
            override = resolve(cfg.backend_override)
        except FxlensError as e:
            if cfg.session_dir:
                append_event(cfg.session_dir, "fxlens_error", {"message": str(e)})
            else:
                print(f"fxlens: error: {e}", file=sys.stderr)
            return REFUSED
    if cfg.runner_hook:  # e.g. `fxlens doctor`'s timing probe (a wrap on the same compile hook)
        # named by the parent command as "module:function", so capture never imports the commands
        # built on it (dependencies point one way: doctor -> capture)
        hook_module, _, hook = cfg.runner_hook.partition(":")
        after = getattr(importlib.import_module(hook_module), hook)(script, cfg.session_dir)
    patch_compile(override, script, cfg.session_dir)
    _note_backend_switches(cfg.session_dir)
    if os.environ.get("TORCH_TRACE"):
        _watch_trace(cfg.session_dir)
    sys.argv = [script, *args]
    # sys.path[0] as python sets it: the script's folder, or the working directory for -m
    sys.path.insert(0, os.getcwd() if module else os.path.dirname(script))
    try:
        # keep the script's globals alive until interpreter shutdown, as plain `python` does: freeing
        # them here (a DDP reducer, a gloo group) while threads still run can deadlock their destructors
        if module:
            _SCRIPT_GLOBALS.append(runpy.run_module(module, run_name="__main__", alter_sys=True))
        else:
            _SCRIPT_GLOBALS.append(runpy.run_path(script, run_name="__main__"))
    except SystemExit as e:
        code = e.code
        if code is None or code == 0:
            return _after(after)
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    except BaseException as e:  # the user's own error: show it the way Python would
        etype, value, tb = sys.exc_info()
        # drop the runner's own frames so the traceback starts in the user's script
        while tb is not None and tb.tb_frame.f_code.co_filename in (
            __file__,
            runpy.__file__,
            "<frozen runpy>",
        ):
            tb = tb.tb_next
        traceback.print_exception(etype, value, tb)
        # Python ends on an uncaught KeyboardInterrupt by SIGINT (a shell shows 130); main() does too
        if isinstance(e, KeyboardInterrupt):
            global _interrupted
            _interrupted = True
            return INTERRUPTED
        return 1
    return _after(after)


def _after(after) -> int:
    """Run what the hook asked for once the script ended well (doctor's re-timing); status 0."""
    if callable(after):
        after()
    return 0


def module_file(module: str) -> str | None:
    """The source file `python -m MODULE` would run, found without importing anything of it (so
    torch.compile is patched before the package's own `__init__` runs); None when there is none."""
    parts = module.split(".")
    if not module or not all(p.isidentifier() for p in parts):
        return None
    for root in [os.getcwd(), *sys.path[1:]]:
        base = os.path.join(root or ".", *parts)
        for candidate in (base + ".py", os.path.join(base, "__main__.py")):
            if os.path.isfile(candidate):
                return os.path.realpath(candidate)
    return None


def _record_environment() -> None:
    """Record the run's torch, triton, python, platform and device for bug reports (after the
    script, so naming the device never initialises CUDA before the script does)."""
    cfg = config.load()
    if not cfg.session_dir or "torch" not in sys.modules:
        return
    try:
        from fxlens.report.markup import run_environment

        append_event(cfg.session_dir, "environment", run_environment())
    except Exception:  # noqa: BLE001, S110 - a report detail must never change the script's exit
        pass


_CLOCK = ClockHandler()


def _record_compile_clock() -> None:
    """The script's compiles timed on the compiling thread (wall and CPU seconds), for `fxlens diff`."""
    cfg = config.load()
    if cfg.session_dir and _CLOCK.records:
        _append_quietly(cfg.session_dir, "compile_clock", _CLOCK.clock().as_dict())


def _record_own_trace() -> None:
    """When the script pointed TORCH_TRACE elsewhere itself, say where: fxlens copies that run's
    logs into the session (else its report would say nothing compiled)."""
    cfg = config.load()
    mine = os.environ.get("TORCH_TRACE")
    if cfg.session_dir and mine and os.path.abspath(mine) != _TRACE_AT_START:
        _append_quietly(cfg.session_dir, "torch_trace", {"dir": os.path.abspath(mine)})


_TRACE_AT_START = os.path.abspath(os.environ["TORCH_TRACE"]) if os.environ.get("TORCH_TRACE") else None


def main() -> None:
    from fxlens.capture import children

    children.die_with_parent(take_group=True)  # fxlens killed, even by SIGKILL: so is this run
    if len(sys.argv) < 2 or (sys.argv[1] == "-m" and len(sys.argv) < 3):
        print("usage: python -m fxlens.capture.runner (SCRIPT | -m MODULE) [ARGS...]", file=sys.stderr)
        sys.exit(2)
    if session := config.load().session_dir:
        # this process is the script's (a rank's, under torchrun): the reader tells its trace log
        # from those of worker processes it forks or spawns, which are not ranks (fxlens.trace.session)
        _append_quietly(session, "process", {"pid": os.getpid(), "rank": os.environ.get("RANK")})
    if sys.argv[1] == "-m":
        module = sys.argv[2]
        path = module_file(module)
        if path is None:
            print(f"{sys.executable}: No module named {module}", file=sys.stderr)
            sys.exit(1)
        code = run_script(path, sys.argv[3:], module=module)
    else:
        code = run_script(sys.argv[1], sys.argv[2:])
    _record_environment()
    _record_own_trace()
    _record_compile_clock()
    sys.stdout.flush()
    sys.stderr.flush()
    if code == INTERRUPTED and _interrupted:
        # as Python does: die by SIGINT, so the parent (and a shell) sees "killed by SIGINT", 130
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    sys.exit(code)


if __name__ == "__main__":
    main()
