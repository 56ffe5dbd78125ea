"""The result of `fxlens doctor`: one typed object and its `--json` contract.

`fxlens doctor` builds a DoctorResult when its runs are diagnosed and writes `to_json()` (the
session's `doctor` event, `--json`); the TUI reads the event back with `from_json`. Its text,
`lines()`, is fxlens.report.doctor_text's, the text `fxlens doctor` prints. It lives in the report layer,
below the commands, for the reason fxlens.report.bisect_result gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fxlens.report.doctor_text import doctor_lines
from fxlens.report.markup import PathShortener
from fxlens.report.memoryblocks import memory_blocks
from fxlens.report.verdicts import read_fields, result_json

_KINDS = {k: list for k in ("argv", "backends_used", "functions", "ranks", "findings")}
_KINDS.update({k: dict for k in ("load", "peak_memory", "wall", "exit_codes", "replay", "warm")})
_KINDS.update(rounds=int, nproc=int, graph_breaks=int, recompiles=int, budget_s=(int, float))


@dataclass
class DoctorResult:
    """`fxlens doctor --json`, in the order the fields are written (docs/schemas/doctor.schema.json)."""

    script: str | None = None
    argv: list[str] = field(default_factory=list)
    backend: str | None = None  # --backend (null: the script's own)
    backends_used: list[str] = field(default_factory=list)
    rounds: int | None = None
    budget_s: float | None = None
    nproc: int | None = None
    load: dict = field(default_factory=dict)
    session: str | None = None
    functions: list[dict] = field(default_factory=list)  # one row per compiled function, side by side
    peak_memory: dict = field(default_factory=dict)
    wall: dict = field(default_factory=dict)
    ranks: list[int] = field(default_factory=list)
    exit_codes: dict = field(default_factory=dict)  # eager / compiled: one exit code per round
    graph_breaks: int | None = None
    recompiles: int | None = None
    findings: list[dict] = field(default_factory=list)  # ranked: kind, message, file, line, fix
    replay: dict | None = None  # what doctor's own re-timing compiled
    summary: str | None = None
    warm: dict | None = field(default=None, metadata={"optional": True})  # --warm: cold vs warm start

    @classmethod
    def from_json(cls, d: dict) -> DoctorResult:
        """A recorded result; fields of the wrong type read as absent."""
        found = cls(**read_fields(cls, d, _KINDS))
        found.functions = [f for f in found.functions if isinstance(f, dict)]
        found.findings = [f for f in found.findings if isinstance(f, dict)]
        return found

    def to_json(self) -> dict:
        """The `--json` dict: every key but `warm`, written only with --warm."""
        return result_json(self)

    @classmethod
    def from_events(cls, events: list[dict]) -> DoctorResult | None:
        """The session's last `doctor` event, or None when doctor never finished in it."""
        found = [e for e in events if e.get("event") == "doctor"]
        return cls.from_json(found[-1]) if found else None

    def blocks(self, ps: PathShortener | None = None) -> list:
        """What the report's Markdown and HTML show of the result: the memory by cause (PS
        shortens paths; nothing when memory was not broken down)."""
        return memory_blocks(self.peak_memory, ps or PathShortener(self.script))

    def lines(self) -> list[str]:
        """The report as `fxlens doctor` prints it, one line each."""
        return doctor_lines(self.to_json())
