"""What `fxlens bisect` says around its CompilerBisector hand-over: the stage verdict before it,
the time it may take, and the inductor code that crashed (from the failing run's traceback).

Each bisector step re-runs the whole script, so on a script that compiles many graphs or compiles
slowly the hand-over can take far longer than the ladder that found the stage. It runs under a
time budget (`--compiler-bisector-budget`); before it starts, the stage and graph are printed, so a
bisect stopped during the hand-over has already said what it knows. torch's bisector names the
pass whose *disabling* hides a failure, which is not always the code that fails (disabling a
constant-folding pass can hide a crash in a pattern that only sees folded constants): the frame
that raised is named beside it.

Pure Python; never imports torch.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fxlens.trace.userfiles import library_path
from fxlens.trace.userframes import parse_traceback

DEFAULT_BUDGET_S = 300.0
# inductor helpers that are never the site itself: the pattern matcher's machinery, the nested
# `repl` a pattern hands to replace_by_example, decorators' wrappers
_GENERIC_FILES = ("/pattern_matcher.py", "/_inductor/utils.py", "/_inductor/exc.py", "/compile_fx.py")
_GENERIC_NAMES = ("repl", "replacement", "<lambda>", "wrapper", "inner", "decorate_context", "_fn")


def crash_site(output: str) -> dict | None:
    """The innermost inductor frame of the run's first traceback that is not pattern-matcher or
    wrapper machinery: {function, file, line, raised_in} (raised_in: the innermost inductor frame,
    when it is another, e.g. the pattern's `repl`). None when no traceback passes through inductor."""
    start = output.find("Traceback (most recent call last):")
    if start < 0:
        return None
    # the first traceback printed is the original exception (the later ones wrap it)
    end = output.find("Traceback (most recent call last):", start + 1)
    frames = [f for f in parse_traceback(output[start : end if end > 0 else None]) if "/_inductor/" in f.file]
    if not frames:
        return None
    site = next(
        (
            f
            for f in reversed(frames)
            if not f.file.endswith(_GENERIC_FILES) and f.function not in _GENERIC_NAMES
        ),
        frames[-1],
    )
    inner = frames[-1]
    found = {"function": site.function, "file": library_path(site.file), "line": site.line}
    if inner is not site:
        found["raised_in"] = f"{inner.function} ({library_path(inner.file)}:{inner.line})"
    return found


def run_output(session_dir: Path) -> str:
    """A run's interleaved stdout and stderr (`fxlens.bisect.runs.OUTPUT_FILE`)."""
    p = Path(session_dir) / "output.txt"
    return p.read_text(errors="replace") if p.exists() else ""


def step_estimate(out) -> float:
    """Seconds one bisector step should take, from a run of the failing stage: its wall time less
    the interpreter start and imports a forked step does not pay (an upper bound when that run
    compiled every graph with the failing stage and a step compiles only the culprit)."""
    split = out.split()
    paid_once = (split.get("startup_s") or 0.0) + (split.get("import_s") or 0.0)
    return max(out.seconds - paid_once, 1.0)


def budget_line(budget: float, estimate: float, source: str) -> str:
    fits = int(budget // estimate) if estimate > 0 else 0
    return (
        f"  budget {budget:.0f}s for the hand-over; each step re-runs the whole script, ~{estimate:.0f}s"
        f" a step ({source}): about {fits} step(s) fit"
    )


def partial_answer(steps: list[dict]) -> str:
    """What the bisector's steps showed before its budget ran out: the subsystems whose disabling
    left the failure (ruled out), and the one it was narrowing."""
    ruled_out = [s["subsystem"] for s in steps if s.get("state") == "test_disable" and s.get("fails")]
    hides = [s["subsystem"] for s in steps if s.get("state") == "test_disable" and not s.get("fails")]
    parts = []
    if hides:
        parts.append(f"disabling {hides[-1]} hides the failure (its applications not yet narrowed)")
    if ruled_out:
        parts.append(f"ruled out: {', '.join(dict.fromkeys(ruled_out))}")
    return "; ".join(parts) or "no step finished"


def say_stage_verdict(runs, base: dict) -> None:
    """The stage and graph, printed before the CompilerBisector hand-over (which may take long, or
    be stopped): what the ladder and the graph search established, as the final verdict says it."""
    from fxlens.bisect.runs import count_runs
    from fxlens.bisect.verdict import site_line, summary_line

    now = {**base, "runs": count_runs(runs.session_dir)}
    runs.echo(f"stage verdict: {summary_line(now)}")
    site = (base.get("failure") or {}).get("site")
    if site:
        runs.echo(f"  {site_line(site)}")


def budget_seconds(text: str) -> float:
    """argparse type of --compiler-bisector-budget: seconds, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected seconds >= 0, got {text!r}")
    return value
