"""The child side of `fxlens minify --kernel`: catch the failing launch (fxlens's own backend here,
inductor's C++ kernels in `fxlens.minify.kernel_inductor`).

Installed by the runner child (FXLENS_RUNNER_HOOK=fxlens.minify.kernel_capture:install) before the
user's script runs. It observes every launch of an fxlens kernel (`CompiledKernel.__call__`): its
parameters are copied before the launch and, after it, what the kernel wrote is compared with the
kernel's ATen nodes evaluated in float64 on the copies, by the very helpers the reproducer embeds.
The first launch that fails (of the kernel FXLENS_KERNEL_NAME names, or of any kernel), or raises,
is shrunk (`fxlens.minify.kernel_shrink`) and written into FXLENS_KERNEL_OUT: `kernel.py` (the
reproducer), `kernel.pt` (its tensors) and `kernel.json` (what the parent reports).
"""

from __future__ import annotations

import json
import os
import platform
import traceback
from pathlib import Path

import torch

from fxlens.config import (
    ENV_KERNEL_BACKEND,
    ENV_KERNEL_COMMAND,
    ENV_KERNEL_CRASH,
    ENV_KERNEL_NAME,
    ENV_KERNEL_OUT,
)
from fxlens.minify import kernel_writer


def versions() -> str:
    import triton

    import fxlens

    return (
        f"torch {torch.__version__}, triton {triton.__version__}, python {platform.python_version()}, "
        f"fxlens {getattr(fxlens, '__version__', '?')}"
    )


CRASH_RUN_TEXT = [
    "Run: python THIS_FILE: it prints its signature line, then the launch ends the process as it",
    "ended the script's (by a signal: exit -6 for SIGABRT); exit 0 when the launch returns.",
    "python THIS_FILE --eager: eager's ATen ops on the same inputs in the kernel's place (they return",
    "or raise; the process lives on). Imports torch only.",
]


class Catcher:
    """Observes fxlens kernel launches; the first failing one becomes a reproducer."""

    def __init__(self, out: Path, name: str):
        self.out, self.name = out, name
        self.done = False
        self.launches: dict[str, int] = {}
        self.seen: set[str] = set()  # every kernel launched (named in the error when NAME never ran)
        self.unchecked: dict[str, str] = {}  # kernel -> why its launches could not be compared
        kernel, _, n = os.environ.get(ENV_KERNEL_CRASH, "").rpartition(":")
        self.crash_at = (kernel, int(n)) if kernel and n.isdigit() else None
        self.h = kernel_writer.helpers_cache()

    def status(self, **data) -> None:
        tmp = self.out / "kernel.json.tmp"
        tmp.write_text(
            json.dumps(
                {"launches": self.launches, "seen": sorted(self.seen), "unchecked": self.unchecked, **data},
                default=str,
            )
        )
        os.replace(tmp, self.out / "kernel.json")

    def wrap(self, original):
        catcher = self

        def observed(ck, *args, xnumel: int, rnumel: int):
            catcher.seen.add(ck.name)
            if catcher.done or ck.fallback or (catcher.name and ck.name != catcher.name):
                return original(ck, *args, xnumel=xnumel, rnumel=rnumel)
            if ck.runtime_error:  # FXLENS_INJECT=runtime_error raises in fxlens's launcher, not the kernel
                catcher.status(found=False, write_error=f"{ck.name} raises in fxlens's launcher "
                               "(FXLENS_INJECT=runtime_error), before the kernel runs: no kernel to reproduce")  # fmt: skip
                catcher.done = True
                return original(ck, *args, xnumel=xnumel, rnumel=rnumel)
            catcher.launches[ck.name] = catcher.launches.get(ck.name, 0) + 1
            n = len(args) - len(ck.size_args)
            snap = [catcher.h["_snap"](a) for a in args[:n]]
            try:
                original(ck, *args, xnumel=xnumel, rnumel=rnumel)
            except Exception as e:
                catcher.caught(ck, snap, args[n:], xnumel, rnumel, error=e)
                raise
            if ck.replayable:
                failure = catcher.failure(ck, snap, args[:n])
                if failure:
                    catcher.caught(ck, snap, args[n:], xnumel, rnumel, failure=failure)
            if not catcher.done:
                catcher.status(found=False)
            return None

        return observed

    def failure(self, ck, snap, got_bufs) -> dict | None:
        """The first output of this launch that disagrees with the fp64 replay, or None."""
        try:
            ref = ck.replay([self.h["_snap"](s) for s in snap], fp64=True)
        except Exception:  # an ATen bounds check raising where the kernel returned: not this check's
            return None
        for i, ((pi, node, _item, _s, _st, _o), r) in enumerate(zip(ck.outputs, ref, strict=True)):
            shape, stride, off = ck._layout(*ck.outputs[i][3:])
            a = got_bufs[pi]
            got = a.as_strided(shape, stride, a.storage_offset() + off)
            ok, err, at, g, rv, tol = self.h["compare"](got, r)
            if not ok:
                op = str(node.target) if node is not None else "?"
                return kernel_writer.mismatch(i, op, err, at, g, rv)
        return None

    def caught(self, ck, snap, sizes, xnumel, rnumel, failure=None, error=None) -> None:
        from fxlens.minify.kernel_shrink import shrink, write_launch

        self.done = True
        try:
            launch = write_launch(ck, snap, list(sizes), xnumel, rnumel)
            shrunk = shrink(ck, launch, self.h) if failure else None
            final = shrunk or launch
            info = header(ck, final, failure, error)
            (self.out / "kernel.py").write_text(final.script(info))
            torch.save(final.tensors(), self.out / "kernel.pt")
            self.status(
                found=True,
                kernel=ck.name,
                graph=ck.graph,
                ops=list(ck.ops),
                compile_id=getattr(ck, "fxlens_compile_id", None),
                user_line=info["user_line"],
                failure=failure,
                error=f"{type(error).__name__}: {error}" if error is not None else None,
                launch=launch.summary(),
                shrunk=shrunk.summary() if shrunk else None,
                notes=info["notes"],
            )
        except Exception as e:  # the user's run goes on; the parent reports why no reproducer
            self.status(found=False, write_error=f"{type(e).__name__}: {e}", trace=traceback.format_exc())

    # -- inductor (fxlens.minify.kernel_inductor calls these) ------------------------------------
    def write_cpp(self, info, path: str, snap: list, failure: dict | None, crash: bool = False) -> None:
        """Write the reproducer of a failing launch of inductor C++ kernel `info` (`crash`: one that
        ends the process, written before it runs)."""
        from fxlens.minify.kernel_inductor import cpp_sources, reference_parts

        self.done = True
        try:
            block, line = cpp_sources(info, path)
            try:
                reference, outputs, consts = reference_parts(info, snap)
            except kernel_writer.Unwritable as e:
                if not crash:  # an accuracy verdict needs the reference; a crash does not
                    raise
                reference, outputs, consts = kernel_writer.no_reference(str(e)), [], []
            what = _what(failure, crash)
            shapes = [list(t.shape) for t in snap if isinstance(t, torch.Tensor)]
            notes = [
                "not shrunk: inductor compiles a kernel for the launch's sizes, so a smaller launch is another "
                "inductor compile; run `fxlens minify` first and this on its reproducer for small inputs"
            ]
            header_info = self._inductor_header(info, f"in the script's run: {what}", line, shapes, notes)
            if crash:
                header_info["run_text"] = CRASH_RUN_TEXT
            (self.out / "kernel.py").write_text(
                kernel_writer.cpp_script(header_info, block, reference, outputs, line, info.name, crash)
            )
            torch.save({"params": list(snap), "consts": consts}, self.out / "kernel.pt")
            crashed = {"launch": self.crash_at[1]} if crash else None
            self._found_inductor(
                info, header_info, failure=failure, launch={"inputs": shapes}, notes=notes, crash=crashed
            )
        except Exception as e:
            self.status(found=False, write_error=f"{type(e).__name__}: {e}", trace=traceback.format_exc())

    def write_cpp_compile_error(self, info, block: str, error: Exception) -> None:
        """Write the reproducer of an inductor C++ kernel that does not compile."""
        self.done = True
        try:
            err = (
                f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
            )
            notes = ["the kernel never compiled, so it never ran: no launch, no inputs"]
            header_info = self._inductor_header(
                info, f"in the script's run: raises {err}", "(none)", [], notes
            )
            (self.out / "kernel.py").write_text(kernel_writer.cpp_compile_error_script(header_info, block))
            torch.save({"params": [], "consts": []}, self.out / "kernel.pt")
            self._found_inductor(info, header_info, error=err, notes=notes)
        except Exception as e:
            self.status(found=False, write_error=f"{type(e).__name__}: {e}", trace=traceback.format_exc())

    def _inductor_header(self, info, failure: str, line: str, shapes: list, notes: list) -> dict:
        import platform as _platform

        return {
            "kernel": info.name,
            "ops": info.ops,
            "what": f"inductor C++ kernel of {len(info.nodes)} post-grad node(s)",
            "graph": info.graph,
            "compile_id": info.compile_id,
            "backend": os.environ.get(ENV_KERNEL_BACKEND) or "inductor",
            "user_line": _user_line_of(info.nodes),
            "failure": failure,
            "launch_text": f"{line}  (tensors: {', '.join(str(s) for s in shapes) or 'none'})",
            "inputs_name": "the .pt file of the same name",
            "versions": f"{versions()}, C++ compiled by inductor (torch._inductor.async_compile) on "
            f"{_platform.machine()}",
            "command": os.environ.get(ENV_KERNEL_COMMAND) or "fxlens minify --kernel",
            "notes": notes,
        }

    def _found_inductor(
        self, info, header_info, failure=None, error=None, launch=None, notes=(), crash=None
    ) -> None:
        self.status(
            crash=crash,
            found=True,
            kernel=info.name,
            graph=info.graph,
            ops=info.ops,
            compile_id=info.compile_id,
            user_line=header_info["user_line"],
            failure=failure,
            error=error,
            launch=launch,
            shrunk=None,
            notes=list(notes),
            backend="inductor",
        )


def _what(failure: dict | None, crash: bool) -> str:
    if crash:
        return "crash: this launch ended the process"
    return (
        f"accuracy: output {failure['output']} ({failure['op']}) max abs err {failure['max_abs_err']:.3g} "
        f"at element {tuple(failure['element'])}: kernel {failure['kernel']!r}, eager fp64 {failure['eager']!r}"
    )


def _user_line_of(nodes) -> str:
    from types import SimpleNamespace

    from fxlens.minify.kernel_shrink import user_line

    return user_line(SimpleNamespace(replay_nodes=list(nodes)))


def header(ck, launch, failure, error) -> dict:
    from fxlens.minify.kernel_shrink import user_line

    if error is not None:
        what = f"raises {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    elif failure:
        what = (
            f"accuracy: output {failure['output']} ({failure['op']}) max abs err {failure['max_abs_err']:.3g} "
            f"at element {tuple(failure['element'])}: kernel {failure['kernel']!r}, eager fp64 {failure['eager']!r}"
        )
    else:
        what = "no failure recorded"
    return {
        "kernel": ck.name,
        "ops": list(ck.ops),
        "what": f"{len(ck.ops)} ATen op(s) fused, launched {xnumel_text(launch)}",
        "graph": ck.graph,
        "compile_id": getattr(ck, "fxlens_compile_id", None),
        "backend": os.environ.get(ENV_KERNEL_BACKEND) or "fxlens",
        "user_line": user_line(ck),
        "failure": f"in the script's run: {what}",
        "launch_text": launch.text(),
        "inputs_name": "the .pt file of the same name",
        "versions": versions(),
        "command": os.environ.get(ENV_KERNEL_COMMAND) or "fxlens minify --kernel",
        "notes": launch.notes,
    }


def xnumel_text(launch) -> str:
    return f"over {launch.xnumel} x {launch.rnumel} elements"


def _record_compile_ids(compile_fx) -> None:
    """Tag each compiled graph's kernels with Dynamo's compile id (kernels run outside a compile,
    where torch knows no current id)."""
    from fxlens.backend.torch_compat import current_compile_id

    original = compile_fx.compile_aten

    def compile_aten(*args, **kwargs):
        call = original(*args, **kwargs)
        cid = current_compile_id()
        for ck in getattr(call, "__globals__", {}).get("K", []):
            ck.fxlens_compile_id = str(cid) if cid is not None else None
        return call

    compile_fx.compile_aten = compile_aten


def install(script: str, session_dir: str):
    """The runner hook: catch launches from now on (returns no after-hook)."""
    out = Path(os.environ[ENV_KERNEL_OUT])
    out.mkdir(parents=True, exist_ok=True)
    from fxlens.backend import compile_fx, runtime

    catcher = Catcher(out, os.environ.get(ENV_KERNEL_NAME, ""))
    runtime.CompiledKernel.__call__ = catcher.wrap(runtime.CompiledKernel.__call__)
    _record_compile_ids(compile_fx)
    from fxlens.minify.kernel_inductor import InductorCatcher

    InductorCatcher(catcher).install()  # patches inductor once the script imports it
    catcher.status(found=False)
    return None
