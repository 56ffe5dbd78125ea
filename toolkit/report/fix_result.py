"""The result of `fxlens fix`: one typed object and its `--json` contract.

`fxlens fix` builds a FixResult when every re-run is done and writes `to_json()` (`--json`); its
text is fxlens.report.fixes.fix_lines, which the report of a session holding fix events shares.
`fxlens report` on such a session reads the result back with `from_events` and renders its
`lines()` (text) or `blocks()` (Markdown, HTML).
fxlens.fix builds and judges each fix's row as a dict, one at a time, recording each as a `fix`
event as soon as it is measured; the result holds them as FixRow records. It lives in the report
layer, below the commands, for the reason fxlens.report.bisect_result gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fxlens.report.document import Bold, Details, Heading, Para, Pre, Table
from fxlens.report.markup import PathShortener
from fxlens.report.verdicts import read_fields, records, result_json
from fxlens.trace.sanitize import clip

_ROW_KINDS = {"params": dict, "line": int, "applied": bool, "before": dict, "after": dict}
_ROW_KINDS.update(outputs_equal=bool, outputs_difference=dict, speed=dict, seconds=(int, float))


@dataclass
class FixRow:
    """One fix, tried alone in a re-run (or stated as a patch): the counts before and after, whether
    the outputs stayed equal, the verdict and why (docs/schemas/fix.schema.json, `fixes` items)."""

    finding: str | None = None
    fix: str | None = None
    how: str | None = None  # config | hook | code
    kind: str | None = None
    params: dict = field(default_factory=dict)
    file: str | None = None
    line: int | None = None
    applied: bool = False
    before: dict | None = None
    after: dict | None = None
    outputs_equal: bool | None = None
    outputs: str = ""
    outputs_difference: dict | None = None
    verdict: str | None = None
    why: str | None = None
    patch: str | None = None
    run: str | None = None
    speed: dict | None = None
    seconds: float | None = field(default=None, metadata={"optional": True})  # a re-run's, when one ran

    @classmethod
    def from_json(cls, d: dict) -> FixRow:
        """A recorded row (a `fix` event, a `--json` entry); fields of the wrong type read as absent."""
        return cls(**read_fields(cls, d, _ROW_KINDS))

    def to_json(self) -> dict:
        return result_json(self)


_KINDS = {"argv": list, "base": dict, "fixes": list, "together": dict, "load": dict, "said": list}


@dataclass
class FixResult:
    """`fxlens fix --json`, in the order the fields are written (docs/schemas/fix.schema.json)."""

    script: str | None = None
    argv: list[str] = field(default_factory=list)
    session: str | None = None
    base: dict = field(default_factory=dict)  # the first run: measures, exit_code, seconds, speed
    fixes: list[FixRow] = field(default_factory=list)  # one row per fix: tried alone, or a patch
    together: dict | None = None  # the fixes that helped, re-run together (null: fewer than two)
    load: dict = field(default_factory=dict)  # load average and cores while it ran
    said: list[str] = field(default_factory=list)  # notes printed before the re-runs

    @classmethod
    def from_json(cls, d: dict) -> FixResult:
        """A recorded result; fields of the wrong type read as absent."""
        return cls(**read_fields(cls, d, _KINDS))

    def __post_init__(self) -> None:
        # built by `fxlens fix` from the rows it recorded one at a time
        self.fixes = records(self.fixes, FixRow)

    @classmethod
    def from_events(cls, events: list[dict]) -> FixResult | None:
        """The result a session's events hold: its `fix_summary` (when the fix finished), each `fix`
        event (appended as it was measured, so a Ctrl-C keeps them) and the last `fix_together`;
        None when no fix was measured."""
        fixes = [e for e in events if e.get("event") == "fix"]
        if not fixes:
            return None
        summary = next((e for e in reversed(events) if e.get("event") == "fix_summary"), {})
        together = next((e for e in reversed(events) if e.get("event") == "fix_together"), None)
        return cls.from_json({**summary, "fixes": fixes, "together": together})

    def to_json(self) -> dict:
        """The `--json` dict, every key always written."""
        return result_json(self)

    def summary(self) -> dict:
        """The session's `fix_summary` event: the result without its fix rows (each is an event)."""
        return {k: v for k, v in self.to_json().items() if k != "fixes"}

    def lines(self, speed=None) -> list[str]:
        """One entry per fix, then the fixes together (`speed(fix) -> str`: the --speed figures)."""
        from fxlens.report.fixes import fix_lines  # the fix table: only a session fix measured

        return fix_lines({"fixes": [f.to_json() for f in self.fixes], "together": self.together}, speed)

    def blocks(self, ps: PathShortener | None = None) -> list:
        """The fixes as a report section (Markdown, HTML): one row per fix, the fixes that helped
        together, the patches of code fixes folded; PS shortens the paths in free text."""
        from fxlens.report.fixes import change

        ps = ps or PathShortener(self.script)
        eq = {True: "yes", False: "no", None: "-"}
        rows = [
            [
                ps.text(f.finding),
                ps.text(f.fix),
                f.how,
                change(f.before, f.after, "→") if f.after else "-",
                eq.get(f.outputs_equal, "-"),
                Bold(f.verdict),
            ]
            for f in self.fixes
        ]
        out: list = [
            Heading(3, "Fixes tried (fxlens fix)"),
            Table(["finding", "fix", "how", "before → after", "outputs equal", "verdict"], rows),
        ]
        if t := self.together:
            out.append(
                Para(
                    f"The fixes that helped, together: {t['verdict']}, "
                    f"{change(t.get('before'), t.get('after'), '→')}"
                )
            )
        patches = [f for f in self.fixes if f.patch]
        if patches:
            out.append(
                Details(
                    f"{len(patches)} code fix(es), not tried: patches",
                    [Pre(clip(ps.text(f.patch), 4000), "diff") for f in patches],
                )
            )
        return out
