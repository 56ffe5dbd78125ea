"""`fxlens run SCRIPT [ARGS...]`: run a script with capture on, write a session, print the report.

The script runs in a child process (`python -m fxlens.capture.runner`, or torchrun for --nproc) with
TORCH_TRACE pointing into the session, so torch's own structured trace records every graph,
break, recompile and guard, and a crash of the script loses nothing already logged.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from fxlens import __version__, config
from fxlens.capture import children
from fxlens.capture.runner import REFUSED, module_file
from fxlens.capture.stdin import RECORD, stdin_for
from fxlens.capture.trace_place import collect_own_trace, move_into, point_trace
from fxlens.errors import FxlensError
from fxlens.live.terminal import wanted as live_wanted
from fxlens.report.exits import how_it_ended
from fxlens.trace.session import LOCK_FILE, TRACE_DIR, Session, new_session_dir, write_info


@dataclass
class RunResult:
    """One captured run of a script."""

    session_dir: Path
    exit_code: int
    seconds: float


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", metavar="NAME", help="override the backend of every torch.compile call")
    parser.add_argument(
        "--session", metavar="DIR", help="session directory (default .fxlens/sessions/<time>-<script>)"
    )
    parser.add_argument("--json", metavar="FILE", help="also write the report as JSON to FILE")
    parser.add_argument(
        "--nproc", metavar="N", type=int, default=0, help="launch N local processes through torchrun"
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="print nothing but errors (the session is written all the same); no live status line",
    )
    parser.add_argument(
        "--no-live",
        action="store_true",
        help="no live status line while the script runs (it is shown only when stderr is a terminal)",
    )


def add_timeout_argument(parser: argparse.ArgumentParser, what: str = "one run of the script") -> None:
    """`--timeout SECONDS`, the same for bisect, minify and doctor (its default stated in --help)."""
    parser.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=float,
        default=None,
        help=f"seconds {what} may take; a run taking longer is ended (with every process it "
        f"started) and counts as a hang (default: {config.RUN_TIMEOUT_DEFAULT_S:g}; 0: no limit)",
    )


def check_script(script: str) -> str:
    """SCRIPT if Python can run it; else a one-line FxlensError, before anything runs."""
    if not os.path.isfile(script):
        raise FxlensError(f"{script}: no such script")
    _check_decodable(script)
    return script


def _check_decodable(script: str) -> None:
    """Refuse a script Python cannot decode (non-UTF-8 bytes and no coding cookie), as `python
    SCRIPT` would, rather than run it and report the SyntaxError as a compile failure."""
    import tokenize

    try:
        with open(script, "rb") as f:
            encoding, _ = tokenize.detect_encoding(f.readline)
            f.seek(0)
            f.read().decode(encoding)
    except OSError as e:
        raise FxlensError(f"{script}: cannot read it ({e.strerror or e})") from None
    except (SyntaxError, UnicodeDecodeError, LookupError) as e:
        where = f" at byte {e.start}" if isinstance(e, UnicodeDecodeError) else ""
        raise FxlensError(
            f"{script}: Python cannot decode it{where} ({type(e).__name__}: "
            f"{getattr(e, 'reason', None) or getattr(e, 'msg', None) or e}); save it as UTF-8, or "
            "declare its encoding on line 1 or 2 (`# -*- coding: latin-1 -*-`)"
        ) from None


# SCRIPT paths that stand for `-m MODULE` (file -> module), filled by the CLI for the one command
# this process runs: every command keeps passing a script path (session names, source scans, user
# frames), and only the child's command line needs to know it must run the module as a module
_MODULES: dict[str, str] = {}


def module_script(module: str) -> str:
    """The file of `-m MODULE`, registered so that child runs start it as `-m MODULE` (relative
    imports, the package's `__init__`, `sys.path[0]` as `python -m` sets them up)."""
    if not module or not all(p.isidentifier() for p in module.split(".")):
        raise FxlensError(f"-m {module!r}: not a module name")
    path = module_file(module)
    if path is None:
        raise FxlensError(f"-m {module}: no module named {module!r} (looked from {os.getcwd()})")
    _MODULES[path] = module
    return path


def module_of(script: str) -> str | None:
    """The MODULE of `-m MODULE` that SCRIPT stands for, or None for a plain script."""
    return _MODULES.get(os.path.realpath(script))


def _target(script: str) -> list[str]:
    module = module_of(script)
    return ["-m", module] if module else [script]


def child_command(script: str, script_args: list[str], nproc: int = 0) -> list[str]:
    if nproc and nproc > 1:
        return [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc-per-node={nproc}",
            "-m",
            "fxlens.capture.runner",
            *_target(script),
            *script_args,
        ]
    return [sys.executable, "-m", "fxlens.capture.runner", *_target(script), *script_args]


def run_captured(
    script: str,
    script_args: list[str],
    *,
    backend: str | None = None,
    session_dir: str | None = None,
    nproc: int = 0,
    env: dict | None = None,
    timeout: float | None = None,
    stdout: str | os.PathLike | None = None,
    stderr: str | os.PathLike | None = None,
    fresh: bool = False,
    trace: bool = True,
    live: bool = False,
    stdin=None,
    cwd: str | None = None,
) -> RunResult:
    """Run SCRIPT under capture into a (new) session directory; returns its exit status.

    `stdout` / `stderr` name files for the script's own output (the same path twice: interleaved),
    so bisect and minify keep a child's traceback without it cluttering their own output.
    `fresh` (`fxlens run --session DIR`): refuse a DIR that already holds a run, which would
    otherwise be merged with this one (doubled counts, a phantom second rank).
    `trace=False`: no torch structured trace (minify's capture run reads only its own records, and
    the trace costs the script about a CPU second on a small inductor compile).
    `live`: show what torch.compile is doing on a status line below the script's output
    (`fxlens.live.terminal`; the caller checks that stderr is a terminal).
    `stdin`: what the script reads (a file object, or fxlens.capture.stdin.Tee, which records what it
    passes on); None: fxlens's own stdin. `cwd`: where the script runs (default: here).
    """
    check_script(script)
    if session_dir:
        sdir = Path(session_dir)
    else:
        how = "set FXLENS_SESSIONS_DIR to a writable folder"
        sdir = new_session_dir(
            config.load().sessions_dir, script, f"pass --session DIR or {how}" if fresh else how
        )
    try:
        sdir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FxlensError(f"{sdir}: cannot create the session directory: {e.strerror or e}") from None
    with _session_lock(sdir):
        if fresh:  # under the lock: a run still writing DIR is refused as such, not as "used"
            refuse_used(sdir)
        return _run_locked(
            script, script_args, sdir, backend, nproc, env, timeout, stdout, stderr,
            trace, live and trace, stdin, cwd,
        )  # fmt: skip


@contextlib.contextmanager
def _session_lock(sdir: Path):
    """Hold the session's lock for the whole run: a second run into the same --session is refused
    (never interleaved). flock is released by the kernel when we die, so a crash leaves no stale lock."""
    try:
        fd = os.open(sdir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise FxlensError(f"{sdir}: cannot write to the session directory: {e.strerror or e}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise FxlensError(
                f"{sdir}: another fxlens run (pid {holder}) is writing this session; use another --session"
            ) from None
        try:  # who holds it, for the refusal message (on a full disk: just not said)
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        except OSError:
            pass
        yield
    finally:
        os.close(fd)  # releases the lock


# what a session directory holds once a run has started in it (the lock file alone does not count)
_SESSION_ENTRIES = ("session.json", "events.jsonl", TRACE_DIR, "runs", "children")


def refuse_used(sdir: Path) -> None:
    """One-line error when SDIR already holds a run: two runs' traces in one session would be read
    as one run on two ranks. An empty or new directory is fine."""
    used = [name for name in _SESSION_ENTRIES if os.path.lexists(sdir / name)]
    if used:
        raise FxlensError(
            f"{sdir}: already holds a session ({used[0]}); pass a new --session DIR, or remove this one first"
        )


def _outputs(files: contextlib.ExitStack, stdout, stderr, live_trace: str | None):
    """The child's stdout and stderr: the files asked for, else (with `live_trace`) fxlens's relay
    that draws the live status line below the script's output, else the terminal (None)."""
    out = files.enter_context(open(stdout, "wb")) if stdout else None
    err = out if stderr and stdout and Path(stderr) == Path(stdout) else None
    if stderr and err is None:
        err = files.enter_context(open(stderr, "wb"))
    if live_trace and out is None and err is None:  # the script's output through fxlens, a status line below
        from fxlens.live.terminal import LiveRelay

        relay = files.enter_context(LiveRelay(live_trace, config.live_interval()))
        out, err = relay.stdout, relay.stderr
    return out, err


def _run_locked(
    script, script_args, sdir, backend, nproc, env, timeout, stdout, stderr,
    trace=True, live=False, stdin=None, cwd=None,
) -> RunResult:  # fmt: skip
    info = {
        "script": os.path.abspath(script),
        "argv": script_args,
        "module": module_of(script),  # `-m MODULE`: the command a report shows says so
        # the switches it ran under, for the command a bug report shows (config.reproducing_env)
        "env": config.reproducing_env({**os.environ, **(env or {})}),
        "backend": backend,
        "nproc": nproc,
        "cwd": os.path.abspath(cwd or os.getcwd()),
        "started": time.time(),
        "fxlens_version": __version__,
        "exit_code": None,
    }
    write_info(sdir, info)
    child_env = dict(os.environ)
    child_env.update(env or {})
    staged = point_trace(child_env, sdir, env, info, trace)
    if backend:
        child_env[config.ENV_BACKEND_OVERRIDE] = backend
    else:
        child_env.pop(config.ENV_BACKEND_OVERRIDE, None)
    t0 = time.perf_counter()
    started = time.time()
    with contextlib.ExitStack() as files:
        out, err = _outputs(files, stdout, stderr, child_env["TORCH_TRACE"] if live else None)
        code = None
        try:
            # its own process group: a timeout, Ctrl-C or SIGTERM ends it with all it forked
            with stdin_for(stdin, sdir) as child_in:
                code = children.run(
                    child_command(os.path.abspath(script) if cwd else script, script_args, nproc),
                    timeout=timeout,
                    env=child_env,
                    stdout=out,
                    stderr=err,
                    stdin=child_in,
                    cwd=cwd,
                )
        finally:
            if staged is not None:
                move_into(staged, sdir)
            if trace:
                collect_own_trace(sdir, info, started)
            seconds = time.perf_counter() - t0
            info.update(exit_code=code, finished=time.time(), seconds=round(seconds, 3))
            if code is None:  # interrupted: say so, so nobody reads the session as a finished run
                info["interrupted"] = True
            elif code == 124 and timeout:
                info["timed_out"] = timeout
            try:
                write_info(sdir, info)
            except FxlensError:
                if code is not None:  # (interrupted: the interrupt is the news; don't replace it)
                    raise
    return RunResult(sdir, code, seconds)


def shell_status(code: int) -> int:
    """The exit status a shell shows for CODE: 128+N for a child killed by signal N."""
    return 128 - code if code < 0 else code


def refused_message(session: Session) -> str | None:
    """The one-line reason the runner refused to run (e.g. an unknown backend), if it did."""
    for ev in session.events:
        if ev.get("event") == "fxlens_error":
            return str(ev.get("message"))
    return None


def main(args: argparse.Namespace) -> int:
    from fxlens.report.build import build_report
    from fxlens.report.outputs import check_folder_writable, check_writable, write_json
    from fxlens.report.text import render_text
    from fxlens.trace.sources import capture_sources

    check_script(args.script)
    check_writable(args.json)
    check_folder_writable(args.session, "--session")
    # the session's path is known before the run starts, so an interrupted run can still say it
    how = "pass --session DIR or set FXLENS_SESSIONS_DIR to a writable folder"
    sdir = args.session or str(new_session_dir(config.load().sessions_dir, args.script, how))
    try:
        result = run_captured(
            args.script,
            args.script_args,
            backend=args.backend,
            session_dir=sdir,
            nproc=args.nproc,
            fresh=True,
            live=not args.no_live and live_wanted(args.quiet),
            stdin=RECORD,  # kept in the session: `fxlens fix --session` replays it in each re-run
        )
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM: what was captured so far is in the session
        if (Path(sdir) / "session.json").exists():
            print(f"fxlens run: interrupted; what was captured so far: {_report_hint(sdir)}", file=sys.stderr)
        raise
    session = Session.open(result.session_dir)
    if result.exit_code == REFUSED and (msg := refused_message(session)):
        raise FxlensError(msg)
    if not session.logs or not any(r.metrics or r.graphs for r in session.ranks):
        if result.exit_code != 0:
            err = FxlensError(
                f"{args.script} {how_it_ended(result.exit_code)} before compiling anything "
                f"(session: {result.session_dir})"
            )
            err.exit_code = shell_status(result.exit_code)
            raise err
    # the source lines the trace points at, as they are now, before the user edits them (a report
    # read later shows these, and says when a file changed since)
    capture_sources(session)
    report = build_report(session)
    if args.json:
        write_json(report, args.json)
    if args.quiet:  # nothing but errors (the session is written all the same)
        return shell_status(result.exit_code)
    sys.stdout.write("\n" + render_text(report))
    status = "" if result.exit_code == 0 else f"; the script {how_it_ended(result.exit_code)}"
    print(f"\nsession: {result.session_dir}{status}\n  {_report_hint(result.session_dir)}")
    return shell_status(result.exit_code)


def _report_hint(sdir) -> str:
    """`fxlens report DIR   |   fxlens tui DIR`, DIR quoted for a shell (a name with a space pastes)."""
    q = shlex.quote(str(sdir))
    return f"fxlens report {q}   |   fxlens tui {q}"
