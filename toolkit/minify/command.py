"""`fxlens minify SCRIPT [ARGS...]`: shrink a failing compiled model to a standalone reproducer.

1. Capture: run SCRIPT once in a child with a capturing wrapper around the real backend
   (`fxlens.minify.capture`): every Dynamo graph saved as code, the failing one named.
2. Confirm: compile that graph alone in a worker; its failure signature is what reduction keeps.
3. Reduce (`fxlens.minify.reduce`) on a pool of worker processes (`fxlens.minify.workers`).
4. Write (`fxlens.minify.repro_writer`): re-run the reproducer 3 times in fresh interpreters first.

This module checks the request and owns the session and the worker pool; the phases themselves
are `fxlens.minify.pipeline`'s. `minify_script()` is the Python entry point (`fxlens demo` uses
it); `main()` is the CLI.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace
from pathlib import Path

from fxlens import config
from fxlens.capture.backends import check_spec
from fxlens.capture.command import add_timeout_argument, check_script, module_of
from fxlens.errors import FxlensError
from fxlens.minify.pipeline import MinifyRun, run_pipeline
from fxlens.report.outputs import add_format_arguments, write_formatted
from fxlens.trace.session import new_session_dir, write_info

CHECKS = ("crash", "accuracy", "auto", "raise", "eager-diff")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend",
        metavar="NAME",
        help="the failing backend: a name, module:attr or path.py:attr (default: the script's own)",
    )
    parser.add_argument(
        "--check",
        choices=CHECKS,
        default="auto",
        help="what counts as failing: an exception, divergence from an fp64 reference, whichever "
        "the script shows (default); raise: eager raises on the inputs and the compiled call does "
        "not raise the same (returns a value, raises otherwise, aborts); eager-diff: outputs beyond "
        "assert_close's default tolerance of eager's (a script comparing with eager)",
    )
    parser.add_argument(
        "--out",
        metavar="FILE",
        help="reproducer path, or an existing folder (or one ending in /) for a fresh name in it "
        "(default repro_cases/minify_*.py); an existing file is never overwritten",
    )
    parser.add_argument(
        "--kernel",
        action="store_true",
        help="write the failing kernel (not the graph) as a standalone script with the real inputs "
        "of its failing launch, compared with eager in float64 (fxlens and inductor kernels)",
    )
    parser.add_argument(
        "--kernel-name",
        metavar="NAME",
        help="with --kernel: the kernel to catch, as bisect names it (default: the first that fails)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the result as JSON to FILE")
    add_format_arguments(parser)
    add_timeout_argument(parser, "the script's own run (each candidate: FXLENS_MINIFY_TIMEOUT, 120)")


def _check_request(script: str, out: str | None, check: str, backend: str | None, json_path) -> None:
    """Refuse bad input before anything runs (one line each)."""
    from fxlens.report.outputs import check_writable

    check_script(script)
    check_writable(json_path)
    if out:  # an existing file is never overwritten (it may be someone's reproducer)
        if os.path.lexists(out):
            raise FxlensError(f"--out {out}: already exists; remove it or choose another name")
        check_writable(out, "--out")
    if check not in CHECKS:
        raise FxlensError(f"--check {check!r}: expected one of {', '.join(CHECKS)}")
    if backend:
        check_spec(backend)


def minify_script(
    script: str,
    script_args: list[str] | None = None,
    backend: str | None = None,
    check: str = "auto",
    out: str | None = None,
    *,
    out_dir: str | None = None,
    json_path: str | None = None,
    progress: bool = True,
    timeout: float | None = None,
) -> dict:
    """Minify SCRIPT's failing compiled graph into a standalone reproducer.

    Args:
        script: the user's script (run as `__main__` in a child process).
        script_args: its arguments.
        backend: the failing backend spec; None: the one the script passes to torch.compile.
        check: "crash", "accuracy", "auto", "raise" or "eager-diff".
        out: reproducer path; None: a fresh name in `out_dir`.
        out_dir: where a default-named reproducer goes; None: FXLENS_REPRO_DIR (repro_cases/).
        json_path: also write the result there.
        progress: draw the progress bar on stderr.
        timeout: seconds the script's own (capture) run may take; None: no limit.

    Returns:
        The `fxlens minify --json` dict: repro, check, signature, original_nodes, final_nodes,
        queries, seconds (and more: reproduced, flaky, session, input bytes, ...).

    Raises:
        FxlensError: bad input, or nothing to minify (with the reason, one line).
    """
    script_args = list(script_args or [])
    _check_request(script, out, check, backend, json_path)
    from fxlens.minify.workers import Pool  # imports torch: only once the request is known to be good

    cfg = config.load_minify()
    if out_dir:
        cfg = replace(cfg, repro_dir=Path(out_dir))
    t0 = time.perf_counter()
    session = new_session_dir(config.load().sessions_dir, script)
    info = {"script": os.path.abspath(script), "argv": script_args, "command": "minify", "backend": backend}
    info.update(module=module_of(script), env=config.reproducing_env())  # for a bug report's command
    write_info(session, {**info, "check": check, "started": time.time()})
    # workers import torch while the script runs (from the start only with cores to spare for them
    # beside the script and this process); told the backend once it is known
    spare = (os.cpu_count() or 1) > 2
    pool = Pool(
        size=cfg.workers, timeout=cfg.timeout, log_dir=session / "workers", cwd=os.getcwd(), spawn=spare
    )
    run = MinifyRun(
        script, script_args, backend, check, out, json_path, progress, cfg, t0, session, pool, timeout
    )
    try:
        return run_pipeline(run)
    finally:
        pool.close()
        pool.close_zygote()
        for close in run.closers:
            close()


def main(args: argparse.Namespace) -> int:
    from fxlens.report.outputs import check_folder_writable, check_writable

    out, out_dir = args.out, None
    if out and (out.endswith(os.sep) or os.path.isdir(out)):  # a folder: a fresh name inside it
        out, out_dir = None, out
    check_writable(args.report, "--report")
    if out_dir or not out:  # where a fresh name goes: --out DIR/, or the default folder
        check_folder_writable(
            out_dir or config.load_minify().repro_dir, "--out" if out_dir else "FXLENS_REPRO_DIR"
        )
    if args.kernel or args.kernel_name:  # the kernel reproducer: its own pipeline
        from fxlens.minify import kernel

        return kernel.main(args, out, out_dir)
    result = minify_script(
        args.script,
        args.script_args,
        args.backend,
        args.check,
        out,
        out_dir=out_dir,
        json_path=args.json,
        progress=True,
        timeout=config.run_timeout(args.timeout),
    )
    print(f"fxlens minify: {result['summary']}")
    print(f"  python {result['repro']}")
    if args.format != "text":
        from fxlens.report.minify_result import MinifyResult
        from fxlens.report.verdicts import render

        invocation = {"script": os.path.abspath(args.script), "module": module_of(args.script)}
        invocation.update(argv=args.script_args, backend=args.backend, check=args.check)
        invocation["env"] = config.reproducing_env()
        blocks = MinifyResult.from_json(result).blocks(args.script, invocation=invocation)
        write_formatted(render(blocks, args.format, "fxlens minify"), args.report)
    if result["interrupted"]:  # the best so far was written as NAME.partial.py
        return result["interrupted_exit"]
    if result["reproduced"].startswith("0/"):
        return 1
    return 0
