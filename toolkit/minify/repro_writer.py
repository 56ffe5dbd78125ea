"""Render a minify candidate as a standalone script, verify it in fresh interpreters, write it.

The same text (less the header) is what minify workers execute for every candidate, so the
reproducer decides "fails, and how" exactly as the reduction did (see `fxlens.minify.candidate_check`).
"""

from __future__ import annotations

import inspect
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

from fxlens.backend.stages import STAGES
from fxlens.capture import accuracy as capture_accuracy
from fxlens.capture.backends import definitions_of, top_level_definitions
from fxlens.minify import candidate_check as minify_check
from fxlens.minify.graph import Candidate, InputSpec

EMBED_MARKER = "# --- embedded in reproducers from here on ---"
SIGNATURE_PREFIX = "fxlens-signature: "
# an import of fxlens at the top level of a line: none may reach a reproducer
FXLENS_IMPORT = re.compile(r"^\s*(?:from|import)\s+fxlens\b")

# environment switches that change what a backend does; carried into the reproducer when set
CARRIED_ENV = ("FXLENS_INJECT", "FXLENS_FUSION_LIMIT", "FXLENS_INTERPRET")


@dataclass(frozen=True)
class ReproSpec:
    """Everything besides the graph that a candidate or reproducer needs."""

    backend: str  # a backend spec (`name`, `module:attr`, `path.py:attr`)
    check: str  # "crash" or "accuracy"
    backward: bool = False
    signature: str = ""
    config_lines: tuple[str, ...] = ()  # non-default torch._dynamo/_inductor/_functorch config
    env: tuple[tuple[str, str], ...] = ()  # carried environment switches
    values_path: str | None = None  # recorded input values (torch.save), when the check needs them
    dynamic: bool = False  # the script compiled with dynamic=True (symbolic shapes)
    # "dynamo": the Dynamo graph, compiled with torch.compile(backend=...); "forward", "backward",
    # "inference": an AOTAutograd ATen graph, compiled by the backend's inner compiler (`inner`)
    level: str = "dynamo"
    inner: str = ""  # a key of INNER_COMPILERS
    # the backend the script compared against (`eager`): the reproducer compares the same two calls
    reference: str = ""
    # the autocast the original call ran under ("cpu:bfloat16"): forwards run inside it, backwards
    # after it (as the script's own backward, outside its `with torch.autocast(...)` block)
    autocast: str = ""
    # the script used the outputs in place after the call (its failure came after the graph
    # returned): the reproducer mutates each output in place, then runs backward when `backward`
    mutate: bool = False

    @property
    def level_name(self) -> str:
        """The level, as `--json` and the session event show it."""
        if self.level == "dynamo":
            return "dynamo graph, forward and backward" if self.backward else "dynamo graph"
        return f"aot {self.level} graph"


# the inner ATen compiler of a backend, as `load_inner()` source (its body); `kind` is filled in
INNER_COMPILERS = {
    # inductor's compiler of one ATen graph, as torch's repro_after="aot" scripts call it
    "inductor": "from torch._inductor.compile_fx import compile_fx_inner\n\n"
    "return functools.partial(compile_fx_inner, is_backward={is_backward}, is_inference={is_inference})",
    # an aot_autograd(fw_compiler=..., bw_compiler=...) backend object: the compiler it names
    "aot_autograd": "kw = (backend or load_backend()).kwargs\n"
    "return next(kw[n] for n in {names!r} if kw.get(n) is not None)",
    # fxlens's own codegen stages: compile_aten with fusion as the stage fuses
    **{
        s.inner: "from fxlens.backend.compile_fx import compile_aten\n\n"
        f"return lambda gm, inputs: compile_aten(gm, list(inputs), {{kind!r}}, fusion={s.fuses})"
        for s in STAGES
        if s.codegen and s.inner
    },
}
# which aot_autograd keyword compiles which graph (AOTAutograd falls back to fw_compiler)
_AOT_COMPILER_NAMES = {
    "forward": ("fw_compiler",),
    "backward": ("bw_compiler", "fw_compiler"),
    "inference": ("inference_compiler", "fw_compiler"),
}


def inner_loader(inner: str, kind: str) -> str:
    """Source of `load_inner(backend=None)`: the inner compiler of graph `kind` (forward, ...)."""
    body = INNER_COMPILERS[inner].format(
        kind=kind,
        is_backward=kind == "backward",
        is_inference=kind == "inference",
        names=_AOT_COMPILER_NAMES[kind],
    )
    imports = "    import functools\n\n" if "functools" in body else ""
    return "def load_inner(backend=None):\n" + imports + textwrap.indent(body, "    ")


def check_source() -> str:
    """The check a reproducer embeds: fxlens.capture.accuracy's body (the accuracy rule), then the
    embedded part of fxlens.minify.candidate_check (both import only torch and the stdlib)."""
    acc = inspect.getsource(capture_accuracy).split("from __future__ import annotations\n", 1)[1]
    src = inspect.getsource(minify_check)
    part = _without_fxlens_imports(src[src.index(EMBED_MARKER) + len(EMBED_MARKER) :].strip("\n"))
    return acc.strip("\n") + "\n\n\n" + part


def _without_fxlens_imports(src: str) -> str:
    """`src` without its top-level imports of fxlens: check.py imports the accuracy rule and the
    signature rules from fxlens.capture.accuracy, whose body a reproducer embeds just above it, and
    a reproducer must run where only torch is installed."""
    import ast

    drop: set[int] = set()
    for node in ast.parse(src).body:
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if any(n == "fxlens" or n.startswith("fxlens.") for n in names):
            drop.update(range(node.lineno, node.end_lineno + 1))
    return "\n".join(ln for i, ln in enumerate(src.splitlines(), 1) if i not in drop)


def backend_loader(spec: str) -> str:
    """Source of `load_backend()` for a backend spec."""
    if ":" not in spec:
        body = f"return {spec!r}"
    else:
        target, _, attr = spec.rpartition(":")
        if target.endswith(".py"):
            # a backend defined in a file (also the user's script): run that file for it
            path = os.path.abspath(target)
            # only the definitions the backend needs (fxlens.capture.backends.definitions_of,
            # embedded): a bug report's top-level code compares, asserts and exits
            body = (
                "import runpy\n\n"
                + inspect.getsource(top_level_definitions)
                + "\n\n"
                + inspect.getsource(definitions_of)
                + "\n\ntry:\n"
                f"    return definitions_of({path!r}, {attr!r})[{attr!r}]\n"
                "except Exception:  # a definition needing more of the script: run all of it\n"
                f"    return runpy.run_path({path!r}, run_name='__fxlens_backend__')[{attr!r}]"
            )
        else:
            body = f"import importlib\nreturn getattr(importlib.import_module({target!r}), {attr!r})"
    return "def load_backend():\n" + textwrap.indent(body, "    ")


def _input_expr(i: int, spec: InputSpec, use_saved: bool) -> str:
    if not spec.is_tensor:
        return repr(spec.scalar)
    value = f", value=SAVED[{spec.saved!r}]" if use_saved and spec.saved else ""
    rng = f", lo={spec.lo!r}, hi={spec.hi!r}" if spec.dtype.startswith(("int", "uint")) else ""
    leaf = "" if spec.leaf else ", leaf=False"
    return (
        f"rand_tensor({tuple(spec.shape)!r}, {tuple(spec.stride)!r}, torch.{spec.dtype}, "
        f"{spec.device!r}, {spec.requires_grad!r}, seed={i}{rng}{value}{leaf})"
    )


def render(cand: Candidate, spec: ReproSpec, header: str = "", values_expr: str | None = None) -> str:
    """The script text for a candidate. `values_expr` is the expression that finds the values file."""
    use_saved = spec.values_path is not None
    parts = [header.rstrip("\n")] if header else []
    parts.append(
        "import os\nimport sys\n\nimport torch\nfrom math import inf, nan  # noqa: F401\nfrom torch import device  # noqa: F401"
    )
    if spec.env:
        parts.append("\n".join(f"os.environ.setdefault({k!r}, {v!r})" for k, v in spec.env))
    if spec.config_lines:
        imports = sorted({ln.split(" = ")[0].rsplit(".", 1)[0] for ln in spec.config_lines})
        imports = sorted({".".join(m.split(".")[:3]) for m in imports})  # the config modules
        parts.append(
            "# non-default torch config the original script set\n"
            + "".join(f"import {m}  # noqa: E402\n" for m in imports)
            + "\n".join(spec.config_lines)
        )
    parts.append("class Repro(torch.nn.Module):\n" + textwrap.indent(cand.forward_source(), "    "))
    if use_saved:
        parts.append(
            "# recorded input values: the failure depends on them (tensors only, weights_only=True)\n"
            f"SAVED = torch.load({values_expr or repr(spec.values_path)}, weights_only=True)"
        )
    rows = ",\n".join(f"        {_input_expr(i, s, use_saved)}" for i, s in enumerate(cand.inputs))
    # a graph with no inputs (every tensor built inside it) takes an empty list
    parts.append(
        f"def make_inputs():\n    return [\n{rows},\n    ]" if rows else "def make_inputs():\n    return []"
    )
    parts.append(backend_loader(spec.backend))
    aten = spec.level != "dynamo"
    if aten:
        parts.append(
            f"# the failure lives in the AOTAutograd {spec.level} graph: compile it with the backend's\n"
            "# inner ATen compiler, as the backend itself does\n" + inner_loader(spec.inner, spec.level)
        )
    parts.append(_constants(spec, aten))
    parts.append(
        "# --- the check fxlens minify ran (fxlens.minify.candidate_check, embedded: torch only) ---\n"
        + check_source()
    )
    parts.append(
        'if __name__ == "__main__":\n'
        "    sys.exit(main(Repro, make_inputs, load_backend, CHECK, BACKWARD, EXPECTED, DYNAMIC"
        + (", load_inner))" if aten else _keywords(spec))
    )
    return "\n\n\n".join(parts) + "\n"


def _constants(spec: ReproSpec, aten: bool) -> str:
    """The reproducer's settings block: CHECK, BACKWARD, ... as `main(...)` reads them."""
    return (
        f"CHECK = {spec.check!r}\nBACKWARD = {spec.backward!r}\nEXPECTED = {spec.signature!r}\n"
        f"DYNAMIC = {spec.dynamic!r}\nLEVEL = {spec.level!r}"
        + (
            f"\n# the original script compared torch.compile(..., backend={spec.reference!r}) with the backend\n"
            f"REFERENCE = {spec.reference!r}"
            if spec.reference and not aten
            else ""
        )
        + (
            "\n# the original call ran under torch.autocast: forwards run inside it, backwards after it\n"
            f"AUTOCAST = {spec.autocast!r}"
            if spec.autocast and not aten
            else ""
        )
        + (
            "\n# the original script mutated the outputs in place after the call (its failure came after)\n"
            f"MUTATE = {spec.mutate!r}"
            if spec.mutate and not aten
            else ""
        )
    )


def header(
    *,
    script: str,
    script_args: list[str],
    spec: ReproSpec,
    original_nodes: int,
    final_nodes: int,
    queries: int,
    note: str = "",
) -> str:
    """The provenance header of a reproducer (also the corpus's `expect` line)."""
    import torch

    from fxlens import __version__

    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = "not installed"
    lines = [
        "# fxlens minify reproducer: standalone, run it with `python THIS_FILE`.",
        f"# source: {os.path.abspath(script)} {' '.join(script_args)}".rstrip(),
        f"# created: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}",
        f"# versions: torch {torch.__version__}, triton {triton_version}, fxlens {__version__}",
        f"# backend: {spec.backend}",
        f"# check: {spec.check}{' (forward and backward)' if spec.backward else ''}"
        + (" (outputs mutated in place after the call, as the script did)" if spec.mutate else ""),
        f"# level: {spec.level_name}{', dynamic=True' if spec.dynamic else ''}",
        f"# nodes: {original_nodes} original -> {final_nodes} final ({queries} queries)",
        # a process killed by a signal exits with no status and prints no signature line
        f"# expect: {spec.signature}"
        if spec.signature.startswith("killed by ")
        else f"# expect: exit 1, {SIGNATURE_PREFIX}{spec.signature}",
    ]
    if note:
        lines.append(f"# note: {note}")
    return "\n".join(lines) + "\n"


def claim(out: str | os.PathLike, numbered: bool = True, also: tuple[str, ...] = ()) -> Path:
    """Create `out` (or, when `numbered`, the first free of out_2, out_3, ...) empty and exclusively
    (O_EXCL), and return it: two minify runs choosing a name at once never get the same one, and
    no existing file is ever replaced (checking then writing later lost the first run's file).
    `also`: suffixes (".pt") claimed under the same stem, all or none.

    Raises:
        FxlensError: `out` is taken and not `numbered` (an explicit --out).
    """
    from fxlens.errors import FxlensError

    base = Path(out)
    base.parent.mkdir(parents=True, exist_ok=True)
    n = 1
    while True:
        p = base if n == 1 else base.with_name(f"{base.stem}_{n}{base.suffix}")
        got: list[Path] = []
        try:
            for q in (p, *(p.with_suffix(s) for s in also)):
                os.close(os.open(q, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
                got.append(q)
            return p
        except FileExistsError:
            for q in got:
                q.unlink(missing_ok=True)
            if not numbered:
                raise FxlensError(f"--out {p}: already exists; remove it or choose another name") from None
            n += 1


def release(path: Path, also: tuple[str, ...] = ()) -> None:
    """Remove a name `claim` made that was never written (still empty): an interrupted write."""
    for q in (path, *(path.with_suffix(s) for s in also)):
        try:
            if q.stat().st_size == 0:
                q.unlink()
        except OSError:
            pass


def default_name(script: str, backend: str, check: str) -> str:
    stem = re.sub(r"\W+", "_", Path(script).stem)
    short = re.sub(r"\W+", "_", backend.rpartition(":")[2] or backend)
    return f"minify_{stem}_{short}_{check}.py"


def signature_in(stderr: str) -> str | None:
    """The signature a reproducer printed, or None."""
    for line in reversed(stderr.splitlines()):
        if line.startswith(SIGNATURE_PREFIX):
            return line[len(SIGNATURE_PREFIX) :].strip()
    return None


def signal_signature(returncode: int) -> str:
    """The signature of a process killed by a signal (a segfault or abort in a backend)."""
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    return f"killed by {name}"


def run_repro(path: Path, timeout: float = 300) -> tuple[int, str | None]:
    """Run a reproducer in a fresh interpreter: (exit status, printed signature)."""
    path = Path(path).resolve()  # it runs from its own folder: a relative path would not resolve there
    from fxlens.capture import children

    env = {k: v for k, v in os.environ.items() if k not in ("TORCH_TRACE",)}
    with tempfile.TemporaryFile() as err:
        # its own process group (see capture.children): a hang or Ctrl-C ends it and what it forked
        code = children.run(
            [sys.executable, str(path)],
            timeout=timeout,
            env=env,
            cwd=path.parent,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    if code == 124:
        return 124, "timeout"
    if code < 0:
        return code, signal_signature(code)
    return code, signature_in(stderr)


def verify(path: Path, signature: str, runs: int = 3, timeout: float = 300, zygote=None) -> int:
    """How many of `runs` re-runs exit non-zero with `signature`. They run concurrently (independent
    processes). One is always `python FILE` in a new interpreter; with a `zygote`
    (`fxlens.minify.verify`), the others are forked from it and skip importing torch."""
    from concurrent.futures import ThreadPoolExecutor

    from fxlens.capture import children

    with ThreadPoolExecutor(max_workers=runs) as ex:
        try:
            forks = (
                ex.submit(zygote.run, path, runs - 1, timeout) if zygote is not None and runs > 1 else None
            )
            fresh = list(ex.map(lambda _: run_repro(path, timeout), range(1 if forks else runs)))
            forked = forks.result() if forks else []
        except KeyboardInterrupt:  # end the re-runs now: the pool's threads wait for them to exit
            children.end_all()
            if zygote is not None:
                zygote.close()
            raise
    if forks is not None and forked is None:  # the zygote is gone: plain interpreters instead
        forked = [run_repro(path, timeout) for _ in range(runs - 1)]
    else:
        forked = [(code, signal_signature(code) if code < 0 else signature_in(err)) for code, err in forked]
    return sum(int(code != 0 and sig == signature) for code, sig in [*fresh, *forked])


def _keywords(spec: ReproSpec) -> str:
    """The end of a Dynamo-level reproducer's `main(...)` call: its keyword arguments."""
    words = (", reference=REFERENCE" if spec.reference else "") + (
        ", autocast=AUTOCAST" if spec.autocast else ""
    )
    return words + (", mutate=MUTATE" if spec.mutate else "") + "))"
