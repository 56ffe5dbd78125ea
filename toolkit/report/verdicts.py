"""What the tools' results share (fxlens.report.bisect_result, minify_result, fix_result,
doctor_result): reading a recorded result back field by field, the source a result names (a
reproducer, a kernel), the environment of the run it came from, and blocks as Markdown or HTML.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from fxlens.report.document import Details, Heading, Pre, environment_blocks, to_html, to_markdown
from fxlens.report.markup import PathShortener, environment
from fxlens.trace.session import EVENTS_FILE, read_events

#: reproducer / kernel source longer than this is clipped in the report (the file has it all)
MAX_SOURCE_CHARS = 60_000


def typed(value, kind):
    """VALUE when it is a KIND (a bool is not a number here), else None."""
    if isinstance(value, bool) and kind is not bool:
        return None
    return value if isinstance(value, kind) else None


def read_fields(cls, d, kinds: dict) -> dict:
    """The fields of dataclass CLS that the recorded dict D holds with their JSON type (KINDS: name
    -> type, str when unnamed); a field missing or of another type is left to its default."""
    if not isinstance(d, dict):
        return {}
    return {
        f.name: v
        for f in fields(cls)
        if f.name in d and (v := typed(d[f.name], kinds.get(f.name, str))) is not None
    }


def optional(f) -> bool:
    """Whether a result field is written only when it has a value (its metadata says so)."""
    return bool(f.metadata.get("optional"))


def result_json(obj) -> dict:
    """A result dataclass as its JSON: every field in declaration order, an optional one only when
    set; a nested record (with its own to_json), alone or in a list, serialised by it."""
    out = {}
    for f in fields(obj):
        value = getattr(obj, f.name)
        if optional(f) and value is None:
            continue
        out[f.name] = _json(value)
    return out


def _json(value):
    if hasattr(value, "to_json"):
        return value.to_json()
    return [_json(v) for v in value] if isinstance(value, list) else value


def records(rows: list, cls) -> list:
    """A list of CLS records from ROWS: a JSON object read with `cls.from_json`, a record kept, any
    other value (in an edited event) left out."""
    return [cls.from_json(r) if isinstance(r, dict) else r for r in rows if isinstance(r, (dict, cls))]


def read_source(path: str | None) -> str | None:
    """The text of a reproducer or kernel file a result names, clipped; None when unreadable."""
    if not path:
        return None
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return None
    return text if len(text) <= MAX_SOURCE_CHARS else text[:MAX_SOURCE_CHARS] + "\n# ... clipped\n"


def tool_heading(tool: str, script: str | None) -> tuple[PathShortener, Heading]:
    """The path shortener of a tool's blocks and their heading (`fxlens bisect: train.py`)."""
    return PathShortener(script), Heading(2, f"fxlens {tool}: {Path(script).name if script else 'script'}")


def source_and_environment(path: str | None, title, ps: PathShortener, env: dict | None, session) -> list:
    """The end of a tool's blocks: the source at PATH (a kernel, a reproducer) folded under
    `title(source)`, none when it cannot be read, then the run's environment (ENV, else SESSION's)."""
    source = read_source(path)
    out = [Details(title(source), [Pre(ps.text(source), "python")])] if source else []
    return out + environment_blocks(env or run_env(session))


def run_env(session: str | None) -> dict:
    """environment() of a bisect/minify session's first child run (its trace and its events)."""
    if not session:
        return environment()
    root = Path(session)
    runs = sorted(root.glob("runs/*")) + sorted(root.glob("children/*"))
    events = next((read_events(r / EVENTS_FILE)[0] for r in runs if (r / EVENTS_FILE).exists()), [])
    return environment(_logs_of(session), events)


def _logs_of(session: str | None) -> list[Path]:
    """The trace logs of a bisect/minify session's child runs (for the traced torch version)."""
    if not session:
        return []
    root = Path(session)
    return sorted(root.glob("runs/*/trace/*.log"))[:1] + sorted(root.glob("children/*/trace/*.log"))[:1]


def render(blocks: list, fmt: str, title: str) -> str:
    """Blocks as "markdown" or "html" text."""
    return to_markdown(blocks) if fmt == "markdown" else to_html(blocks, title)
