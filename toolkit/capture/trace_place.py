"""Where a run's child writes its TORCH_TRACE, and what is moved or copied once it ends.

The session's own folder by default; a short temporary folder when the session's absolute path is
too long for torch's trace logging (moved into the session afterwards); the user's own TORCH_TRACE
when one is set (its logs copied into the session, so fxlens reads them too).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from fxlens import config
from fxlens.trace.session import TRACE_DIR

# the longest path the kernel opens, and room for what torch and fxlens add below a session folder
# (trace/dedicated_log_torch_trace_rank_0_<random>.log, children/<n>/...)
_PATH_MAX = 4096
_LONGEST_ENTRY = 256


def move_into(staged: Path, sdir: Path) -> None:
    """Move what a run wrote into its short temporary folder into the session (merged, relative to
    our own working directory, where the session's path is short enough), then remove the folder."""
    for src in sorted(staged.rglob("*")):
        if src.is_dir():
            continue
        dest = sdir / src.relative_to(staged)
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            if dest.exists() and src.name == "events.jsonl":  # events written on both sides: appended
                with open(dest, "ab") as out, open(src, "rb") as inp:
                    shutil.copyfileobj(inp, out)
            else:
                shutil.move(str(src), str(dest))
        except OSError:
            continue  # a full disk: the rest still moves; what stayed is said nowhere, but the run is kept
    shutil.rmtree(staged, ignore_errors=True)


def collect_own_trace(sdir: Path, info: dict, since: float) -> None:
    """Honour a TORCH_TRACE of the user's. Set before fxlens ran (`info["torch_trace"]`): torch
    wrote there, and this run's logs are copied into the session for fxlens to read. Set by the
    script itself (the runner's `torch_trace` event): torch was imported before the script ran and
    wrote into the session, so the logs are copied to the script's folder. Why not, when a copy
    fails, goes into `info["torch_trace_note"]` (the report says it)."""
    from fxlens.trace.session import EVENTS_FILE, read_events

    own = sdir / TRACE_DIR
    events, _ = read_events(sdir / EVENTS_FILE)
    wanted = [
        str(e["dir"]) for e in events if e.get("event") == "torch_trace" and isinstance(e.get("dir"), str)
    ]
    moves = [(Path(info["torch_trace"]), own)] if info.get("torch_trace") else []
    moves += [(own, Path(d)) for d in dict.fromkeys(wanted)]
    for src, dest in moves:
        if src.absolute() == dest.absolute():
            continue
        try:
            logs = [p for p in src.glob("*.log") if p.is_file() and p.stat().st_mtime >= since - 1]
            dest.mkdir(parents=True, exist_ok=True)
            for p in logs:
                shutil.copy2(p, dest / p.name)
        except OSError as e:
            info["torch_trace_note"] = (
                f"the run's TORCH_TRACE logs could not be copied from {src} to {dest}: {e.strerror or e}"
            )
    if wanted:
        info["torch_trace"] = wanted[-1]


def point_trace(child_env: dict, sdir: Path, env: dict | None, info: dict, trace: bool) -> Path | None:
    """Set the child's TORCH_TRACE and session folder; the short temporary folder they point into
    when the session's own absolute path is too long (None otherwise)."""
    # absolute: a script that changes directory before compiling (Hydra's job.chdir, launchers)
    # would otherwise write its trace and events relative to its new directory, not into the session;
    # too long an absolute path (a deep working directory) would make torch's trace logging fail
    # inside the script: the child then writes into a short temporary folder, moved in afterwards
    where = sdir.absolute()
    staged = None
    if len(os.fsencode(str(where))) + _LONGEST_ENTRY > _PATH_MAX:
        staged = Path(tempfile.mkdtemp(prefix="fxlens-run-"))
        where = staged
    child_env["TORCH_TRACE"] = str(where / TRACE_DIR)
    # the user's own TORCH_TRACE is honoured: torch writes there, and fxlens copies the logs of this
    # run into the session afterwards (a script that sets TORCH_TRACE itself is found by the runner)
    user_trace = (env or {}).get("TORCH_TRACE") or os.environ.get("TORCH_TRACE")
    if user_trace and trace:
        child_env["TORCH_TRACE"] = os.path.abspath(user_trace)
        info["torch_trace"] = child_env["TORCH_TRACE"]
    if not trace:
        del child_env["TORCH_TRACE"]  # nor the user's own: this run is not theirs to record
    child_env[config.ENV_SESSION] = str(where)
    return staged
