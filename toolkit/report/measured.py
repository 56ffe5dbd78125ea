"""What `fxlens fix` measured of the fixes a report prints, put beside them.

A fix printed as advice and measured to hurt or do nothing is never shown without that measurement:
the recompile causes and graph breaks of a report carry `measured` (each of their actions'
verdicts) when a fix session exists: the session itself (`fxlens fix --session DIR`), else the
latest `fxlens fix` session of the same script under the sessions folder. `fxlens fix` notes that
session in the folder's index (`fix-sessions.json`: script -> session) when it measures a fix, so a
report reads it directly; sessions from before the index are found by a bounded scan.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from fxlens.trace.session import EVENTS_FILE, read_events

# sessions looked at for a fix session of the same script, newest first, when the index names none
MAX_SESSIONS = 200
# beside the sessions: {a script's real path: the folder name of its latest fix session}
INDEX = "fix-sessions.json"


def _fix_events(events: list[dict]) -> list[dict]:
    return [e for e in events if e.get("event") == "fix" and e.get("verdict") != "not tried"]


def _read_events(sdir: Path) -> list[dict]:
    return read_events(sdir / EVENTS_FILE)[0]  # a torn last line skipped


def _sessions_root() -> Path:
    from fxlens import config  # loaded only for a session whose script is known

    return Path(config.load().sessions_dir)


def _read_index(root: Path) -> dict:
    try:
        index = json.loads((root / INDEX).read_text())
    except (OSError, ValueError):
        return {}
    return index if isinstance(index, dict) else {}


def record_fix_session(sdir: str | os.PathLike, script: str) -> None:
    """Note SDIR as SCRIPT's latest fix session in its sessions folder's index (a session outside
    the folder is not noted: reports look for fix sessions in the folder only). Best effort: a
    report without a note scans, as for sessions made before the index."""
    root, sdir = _sessions_root(), Path(sdir)
    try:
        if sdir.resolve().parent != root.resolve():
            return
        index = {**_read_index(root), os.path.realpath(script): sdir.name}
        tmp = root / f".{INDEX}.{os.getpid()}"
        tmp.write_text(json.dumps(index, indent=1))
        os.replace(tmp, root / INDEX)  # a reader sees the old index or the new, never half of one
    except OSError:
        pass


def _recorded_fix_session(script: str, here: Path) -> tuple[Path | None, list[dict]]:
    """The fix session the index names for SCRIPT and its measured fixes; (None, []) without one."""
    root = _sessions_root()
    name = _read_index(root).get(os.path.realpath(script))
    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        return None, []
    d = root / name
    if d.resolve() == here.resolve():
        return None, []
    fixes = _fix_events(_read_events(d))
    return (d, fixes) if fixes else (None, [])


def _latest_fix_session(script: str, here: Path | None) -> tuple[Path | None, list[dict]]:
    root = _sessions_root()
    try:
        dirs = sorted((d for d in root.iterdir() if d.is_dir()), reverse=True)[:MAX_SESSIONS]
    except OSError:
        return None, []
    for d in dirs:
        if here is not None and d.resolve() == here.resolve():
            continue
        try:
            info = json.loads((d / "session.json").read_text())
        except (OSError, ValueError):
            continue
        if os.path.realpath(str(info.get("script") or "")) != os.path.realpath(script):
            continue
        fixes = _fix_events(_read_events(d))
        if fixes:
            return d, fixes
    return None, []


def measured(session) -> tuple[str | None, dict]:
    """(the fix session, {action key: {verdict, why}}) for SESSION's script; ({}) when none."""
    own = _fix_events(session.events)
    where: Path | None = Path(session.path) if own else None
    if not own:
        script = (session.info or {}).get("script")
        if not script:
            return None, {}
        where, own = _recorded_fix_session(script, Path(session.path))
        if where is None:
            where, own = _latest_fix_session(script, Path(session.path))
    from fxlens.report.fixes import key  # the fix kinds: only where fixes were measured

    got = {}
    for e in own:
        act = {"kind": e.get("kind"), "params": e.get("params") or {}}
        if act["kind"]:
            got[key(act)] = {"verdict": e["verdict"], "why": e.get("why") or ""}
    return (str(where) if where else None), got


def attach(report: dict, session) -> None:
    """Each recompile cause and graph break with actions gets `measured`: its actions' verdicts."""
    try:
        where, got = measured(session)
    except (OSError, KeyError, TypeError, ValueError):
        return
    if not got:
        return
    report["fix_session"] = where
    from fxlens.report.fixes import key

    for item in (report.get("recompile_causes") or []) + (report.get("graph_breaks") or []):
        rows = []
        for act in item.get("actions") or []:
            m = got.get(key(act))
            if m:
                rows.append({"kind": act["kind"], **m})
        if rows:
            item["measured"] = rows
