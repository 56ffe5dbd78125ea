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
import sys
import traceback

from fxlens import config
from fxlens.errors import FxlensError
from fxlens.trace.session import append_event

# exit status of the runner when fxlens itself refuses (bad backend): the parent reports it
REFUSED = 3
_SCRIPT_GLOBALS: list[dict] = []


def patch_compile(override, script: str, session: str) -> None:
    """Wrap torch.compile: record the backend each call asks for, and apply the override."""
    import torch

    from fxlens.capture.backends import describe

    original = torch.compile
    if getattr(original, "_fxlens_patched", False):
        return

    def compile(model=None, **kwargs):
        asked = describe(kwargs.get("backend", "inductor"), script)
        if session:
            frame = sys._getframe(1)
            _append_quietly(
                session,
                "compile_call",
                {
                    "backend": asked,
                    "file": frame.f_code.co_filename,
                    "line": frame.f_lineno,
                    "override": bool(override),
                },
            )
        if override is not None:
            kwargs["backend"] = override
        if model is None:
            # `@torch.compile(backend=...)`: torch's own decorator would call torch.compile again (this
            # wrapper) and record the call twice; call the original directly once the function is known
            return lambda fn: original(fn, **kwargs)
        return original(model, **kwargs)

    compile._fxlens_patched = True
    compile.__wrapped__ = original
    torch.compile = compile


def _append_quietly(session: str, kind: str, data: dict) -> None:
    """An event for the parent; on a full disk it is lost, but the user's script never fails for it."""
    try:
        append_event(session, kind, data)
    except OSError:
        pass


def run_script(script: str, args: list[str]) -> int:
    cfg = config.load()
    script = os.path.abspath(script)
    override = None
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
    if cfg.runner_hook:  # e.g. `fxlens doctor`'s timing probe; first, so capture still sees user frames
        # named by the parent command as "module:function", so capture never imports the commands
        # built on it (dependencies point one way: doctor -> capture)
        module, _, func = cfg.runner_hook.partition(":")
        getattr(importlib.import_module(module), func)(script, cfg.session_dir)
    patch_compile(override, script, cfg.session_dir)
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(script))
    try:
        # keep the script's globals alive until interpreter shutdown, as plain `python` does: freeing
        # them here (a DDP reducer, a gloo group) while threads still run can deadlock their destructors
        _SCRIPT_GLOBALS.append(runpy.run_path(script, run_name="__main__"))
    except SystemExit as e:
        code = e.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    except BaseException:  # the user's own error: show it the way Python would
        etype, value, tb = sys.exc_info()
        # drop the runner's own frames so the traceback starts in the user's script
        while tb is not None and tb.tb_frame.f_code.co_filename in (
            __file__,
            runpy.__file__,
            "<frozen runpy>",
        ):
            tb = tb.tb_next
        traceback.print_exception(etype, value, tb)
        return 1
    return 0


def main() -> None:
    from fxlens.capture import children

    children.die_with_parent(take_group=True)  # fxlens killed, even by SIGKILL: so is this run
    if len(sys.argv) < 2:
        print("usage: python -m fxlens.capture.runner SCRIPT [ARGS...]", file=sys.stderr)
        sys.exit(2)
    code = run_script(sys.argv[1], sys.argv[2:])
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)


if __name__ == "__main__":
    main()
